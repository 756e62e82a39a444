package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fenixrt/fenix/approvals"
	"github.com/fenixrt/fenix/approvals/web"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/observability"
	"github.com/fenixrt/fenix/workflows"
)

func (c *connection) inbox() *approvals.Inbox {
	return &approvals.Inbox{Client: c.Client, Namespace: c.namespace, UIBase: c.uiBase}
}

// cliUser is who a decision from the starter records.
func cliUser() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if host == "" {
		return "cli:" + name
	}
	return "cli:" + name + "@" + host
}

func cmdPending(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("pending", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	query := fs.String("query", "", "narrow the list with a visibility query, e.g. 'ConversationId = \"c1\"'")
	if err := fs.Parse(args); err != nil || fs.NArg() > 1 {
		return exitUsage, usageError{"expected at most one WORKFLOW_ID"}
	}
	conn, err := connect(ctx)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	in := conn.inbox()
	var l approvals.Listing
	if fs.NArg() == 1 {
		if *query != "" {
			return exitUsage, usageError{"-query narrows the list across runs; it does not apply to one WORKFLOW_ID"}
		}
		l.Calls, err = in.ListRun(ctx, fs.Arg(0))
		l.At = time.Now().UTC()
	} else {
		l, err = in.List(ctx, *query)
	}
	if err != nil {
		return exitFailed, err
	}
	if *asJSON && fs.NArg() == 1 {
		// One run's form keeps its array shape (a superset of
		// pending_permissions' fields).
		return exitOK, writeJSON(c.stdout, l.Calls)
	}
	if *asJSON {
		return exitOK, writeJSON(c.stdout, l)
	}
	printListing(c, l)
	return exitOK, nil
}

func printListing(c *cli, l approvals.Listing) {
	for _, p := range l.Problems {
		fmt.Fprintf(c.stderr, "warning: run %s waits for a decision but its calls could not be read: %s\n", contract.Printable(p.WorkflowID), contract.Printable(p.Error))
	}
	if l.Truncated {
		fmt.Fprintf(c.stderr, "warning: more than %d runs wait; narrow the list with -query\n", approvals.MaxRuns)
	}
	if len(l.Calls) == 0 {
		fmt.Fprintln(c.stdout, "No tool call is waiting for a permission decision.")
		return
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REF\tCALL\tWAITING\tEXPIRES IN\tCONVERSATION\tTOOL\tARGUMENTS\tASKS")
	// Every field but the times and the reference comes from the run (a
	// call ID is the model's, a reason the hook's): Printable keeps a
	// terminal escape or a newline in one from rewriting the table.
	for _, call := range l.Calls {
		asks := call.Permission
		if call.RequestedBy != "" {
			asks += " (hook " + call.RequestedBy + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", call.Ref, contract.Printable(call.CallID), age(call.WaitingSeconds), age(call.ExpiresInSeconds),
			contract.Printable(orDash(call.ConversationID)), contract.Printable(call.ToolName), call.Summary, contract.Printable(asks))
	}
	_ = tw.Flush()
	for _, call := range l.Calls {
		if call.SummaryCut {
			printArguments(c, call)
		}
	}
	fmt.Fprintf(c.stdout, "\nDecide with: starter approve REF / starter deny -reason TEXT REF\n")
}

// maxPrintedArguments bounds the arguments pending prints for one call.
const maxPrintedArguments = 64 << 10

// printArguments prints a call's arguments whole, indented JSON a line at
// a time through Printable, when its row's summary was cut: the person
// approves what they read, and the cut part is where an agent would put
// what it wants unread.
func printArguments(c *cli, call approvals.Call) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a person reads it: && stays &&
	enc.SetIndent("", "  ")
	err := enc.Encode(call.Arguments)
	raw := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		fmt.Fprintf(c.stdout, "\n%s: the arguments do not encode as JSON (%v): read them with starter pending -json\n", call.Ref, err)
		return
	}
	fmt.Fprintf(c.stdout, "\n%s %s, arguments in full (its row is cut):\n", call.Ref, contract.Printable(call.ToolName))
	rest := 0
	if len(raw) > maxPrintedArguments {
		raw, rest = raw[:maxPrintedArguments], len(raw)-maxPrintedArguments
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		fmt.Fprintf(c.stdout, "  %s\n", contract.Printable(line))
	}
	if rest > 0 {
		fmt.Fprintf(c.stdout, "  … %d more bytes: starter pending -json shows them\n", rest)
	}
}

func age(seconds int64) string {
	if seconds < 0 {
		return "expired"
	}
	return (time.Duration(seconds) * time.Second).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdDecide(decision string) func(ctx context.Context, c *cli, args []string) (int, error) {
	return func(ctx context.Context, c *cli, args []string) (int, error) {
		fs := flag.NewFlagSet(decision, flag.ContinueOnError)
		fs.SetOutput(c.stderr)
		reason := fs.String("reason", "decided from the starter", "reason recorded in the trace and audit log")
		content := ""
		if decision == workflows.DecisionAllow {
			fs.StringVar(&content, "content", "", "the answer to an MCP server's form (a pending \"elicitation: SERVER\"), a JSON object matching its requested_schema")
		}
		argsHash := fs.String("args-hash", "", "with WORKFLOW_ID CALL_ID: the arguments hash you reviewed (from pending -json); the run refuses the decision if the call's arguments hash differently")
		if err := fs.Parse(args); err != nil || fs.NArg() < 1 || fs.NArg() > 2 {
			return exitUsage, usageError{"expected REF (from `starter pending`) or WORKFLOW_ID CALL_ID"}
		}
		conn, err := connect(ctx)
		if err != nil {
			return exitFailed, err
		}
		defer conn.Close()
		in := conn.inbox()
		var call approvals.Call
		if fs.NArg() == 1 {
			if *argsHash != "" {
				return exitUsage, usageError{"-args-hash goes with WORKFLOW_ID CALL_ID; a REF already names the arguments"}
			}
			call, err = in.Find(ctx, fs.Arg(0))
		} else {
			call, err = in.FindByIDs(ctx, fs.Arg(0), fs.Arg(1))
			if err == nil && *argsHash != "" {
				call.ArgsHash = *argsHash
			}
		}
		if err != nil {
			return exitFailed, err
		}
		var answer map[string]any
		if content != "" {
			if err := json.Unmarshal([]byte(content), &answer); err != nil || answer == nil {
				return exitUsage, usageError{fmt.Sprintf("-content %q is not a JSON object", content)}
			}
		}
		out, err := in.Decide(ctx, approvals.Decision{WorkflowID: call.WorkflowID, RunID: call.RunID, CallID: call.CallID,
			ArgsHash: call.ArgsHash, Decision: decision, Reason: *reason, DecidedBy: cliUser(), Content: answer})
		if err != nil {
			return exitFailed, err
		}
		done := map[string]string{"allow": "Allowed", "deny": "Denied"}[decision]
		fmt.Fprintf(c.stdout, "%s: call %s (%s %s) of %s\n", done,
			contract.Printable(out.CallID), contract.Printable(call.ToolName), call.Summary, contract.Printable(call.WorkflowID))
		return exitOK, nil
	}
}

// DefaultInboxAddr is where `starter inbox` listens by default.
const DefaultInboxAddr = "127.0.0.1:8280"

func cmdInbox(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("inbox", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	addr := fs.String("http", DefaultInboxAddr, "listen address; beyond loopback it needs FENIX_INBOX_TOKENS=name=token,...")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		return exitUsage, usageError{"expected only flags"}
	}
	tokens, err := web.ParseTokens(os.Getenv("FENIX_INBOX_TOKENS"))
	if err != nil {
		return exitFailed, err
	}
	conn, err := connect(ctx)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	h, err := web.New(web.Config{Inbox: conn.inbox(), Tokens: tokens, ListenAddr: *addr, LocalName: cliUser()})
	if err != nil {
		return exitFailed, err
	}
	mux := http.NewServeMux()
	mux.Handle("/inbox/", http.StripPrefix("/inbox", h))
	mux.Handle("GET /{$}", http.RedirectHandler("/inbox/", http.StatusFound))
	srv, err := observability.StartOpsServer(*addr, mux, nil)
	if err != nil {
		return exitFailed, err
	}
	page := fmt.Sprintf("http://%s/inbox/", srv.Addr())
	if link := h.LocalLink(page); link != "" {
		// The token tells this terminal's user from every other process
		// on the host, an agent's commands included.
		page = link
	}
	fmt.Fprintf(c.stdout, "Approvals inbox: %s (namespace %s). Ctrl-C stops it.\n", page, conn.namespace)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return exitOK, nil
}
