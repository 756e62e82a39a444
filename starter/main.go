// Command starter starts, cancels and inspects Fenix work from the command
// line. Run `starter help` for usage.
package main

import (
	"context"

	"errors"
	"fmt"
	"github.com/fenixrt/fenix/workflows"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitCanceled = 3
)

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

type command struct {
	name    string
	args    string
	summary string
	run     func(ctx context.Context, c *cli, args []string) (int, error)
}

var commands = []command{
	{"run", "[flags] FILE", "run an assignment (ExecuteAssignment) from a JSON file and print the result", cmdRun},
	{"prepare", "[flags] FILE", "run a prepare_round request (PrepareRound) from a JSON file and print the messages", cmdPrepare},
	{"agent", "[flags] FILE | -prompt TEXT", "run an agent turn (AgentTurn), printing tool calls as they happen; Ctrl-C cancels", cmdAgent},
	{"result", "WORKFLOW_ID", "wait for a run and print its result", cmdResult},
	{"cancel", "[-reason TEXT] WORKFLOW_ID", "send the cancel signal to a run", cmdCancel},
	{"session", "end|show -conversation ID [-reason REASON] [-json]", "end a conversation's Claude Code session (its SessionEnd hooks run), or show it and its $CLAUDE_ENV_FILE lines", cmdSession},
	{"approve", "[-reason TEXT] [-content JSON] REF | WORKFLOW_ID CALL_ID", "allow a tool call waiting for permission (decide_permission)", cmdDecide(workflows.DecisionAllow)},
	{"deny", "[-reason TEXT] REF | WORKFLOW_ID CALL_ID", "deny a tool call waiting for permission", cmdDecide(workflows.DecisionDeny)},
	{"pending", "[-json] [-query Q] [WORKFLOW_ID]", "list tool calls waiting for permission, across all runs or in one", cmdPending},
	{"inbox", "[-http ADDR]", "serve the approvals inbox web page (FENIX_INBOX_TOKENS beyond loopback)", cmdInbox},
	{"trace", "[-json] WORKFLOW_ID", "print a run's trace (works while it runs)", cmdTrace},
	{"reports", "[-json] WORKFLOW_ID", "print a run's reports (works while it runs)", cmdReports},
	{"metrics", "WORKFLOW_ID", "print a run's live metrics", cmdMetrics},
	{"demo", "[flags]", "start a dev server and a worker, run a sample assignment, print its result and Web UI link", cmdDemo},
	{"bench", "[-n N] [-concurrency 1,20]", "measure ExecuteAssignment against a bare workflow on a fresh dev server", cmdBench},
	{"policy-diff", "-hooks-file FILE [flags]", "re-decide recorded tool calls under a candidate policy; exit 1 when any verdict changes", cmdPolicyDiff},
	{"verify", "[-query Q] [-since D] [-json]", "check that every executed tool call followed a passed review, a PreToolUse allow and any asked-for grant; exit 1 when one did not", cmdVerify},
	{"mcp", "[-http ADDR] [-allow LIST] [flags]", "serve the workers' governed tools over MCP (stdio, or Streamable HTTP at ADDR/mcp and HTTP+SSE at ADDR/sse)", cmdMCP},
	{"certs", "-dir DIR [-server-names N,...] [-owner ID=UID]", "issue the compose stack's mutual-TLS certificates (CA, Temporal server, worker, operator, UI); keeps what is still good", cmdCerts},
	{"rewind", "WORKFLOW_ID -to STAGE [flags]", "reset a run to the workflow task before a stage (compact, review, pre_tool_use, permission, step)", cmdRewind},
}

// cli holds the process's streams.
type cli struct {
	stdout io.Writer
	stderr io.Writer
}

// Run executes one subcommand and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		c.usage()
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, cmd := range commands {
		if cmd.name != args[0] {
			continue
		}
		code, err := cmd.run(ctx, c, args[1:])
		if err != nil {
			var ue usageError
			if errors.As(err, &ue) {
				fmt.Fprintf(stderr, "starter %s: %s\nusage: starter %s %s\n", cmd.name, ue.msg, cmd.name, cmd.args)
				return exitUsage
			}
			fmt.Fprintf(stderr, "starter %s: %v\n", cmd.name, err)
			if code == exitOK {
				code = exitFailed
			}
		}
		return code
	}
	fmt.Fprintf(stderr, "starter: unknown command %q\n\n", args[0])
	c.usage()
	return exitUsage
}

func (c *cli) usage() {
	fmt.Fprintf(c.stderr, `Usage: starter COMMAND [ARGS]

Starts, cancels and inspects Fenix work on a Temporal server. Connection
settings come from TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
TEMPORAL_TLS_* and TEMPORAL_PROFILE (envconfig). FENIX_UI_URL sets the Web UI
base address printed with each run (default: derived from TEMPORAL_ADDRESS).

Commands:
`)
	for _, cmd := range commands {
		fmt.Fprintf(c.stderr, "  %-11s %-36s %s\n", cmd.name, cmd.args, cmd.summary)
	}
	fmt.Fprintf(c.stderr, "\nExit status: 0 completed, 1 failed or error, 2 usage, 3 canceled.\n")
}
