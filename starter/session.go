package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/sessions"
	"github.com/fenixrt/fenix/workflows"
)

const sessionUsage = "expected: session end -conversation ID [-reason REASON], or session show -conversation ID [-json]"

// cmdSession is `session end -conversation ID [-reason R]`: the kernel
// ending a conversation's Claude Code session, so its SessionEnd hooks
// run; and `session show`, which prints it.
func cmdSession(ctx context.Context, c *cli, args []string) (int, error) {
	if len(args) > 0 && args[0] == "show" {
		return cmdSessionShow(ctx, c, args[1:])
	}
	if len(args) == 0 || args[0] != "end" {
		return exitUsage, usageError{sessionUsage}
	}
	fs := flag.NewFlagSet("session end", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	conversation := fs.String("conversation", "", "the conversation_id whose session ends")
	taskQueue := fs.String("task-queue", envOr("FENIX_TASK_QUEUE", workflows.DefaultTaskQueue), "the workers' task queue (env FENIX_TASK_QUEUE)")
	reason := fs.String("reason", hooks.EndReasonPromptInputExit, "SessionEnd reason: "+strings.Join(hooks.EndReasons, ", "))
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 || *conversation == "" {
		return exitUsage, usageError{sessionUsage}
	}
	conn, err := connect(ctx)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	res, err := sessions.End(ctx, conn.Client, *taskQueue, *conversation, *reason)
	if err != nil {
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return exitFailed, fmt.Errorf("conversation %q has no session (no run of it since the last end, or it was forgotten)", *conversation)
		}
		return exitFailed, err
	}
	if !res.Ended {
		fmt.Fprintf(c.stdout, "Nothing to end: %s\n", res.Message)
		return exitOK, nil
	}
	fmt.Fprintf(c.stdout, "Ended the session of conversation %s (reason %s); its SessionEnd hooks ran.\n", *conversation, res.Reason)
	return exitOK, nil
}

// cmdSessionShow prints a conversation's session: whether it runs, which
// SessionStarts it fired, and the $CLAUDE_ENV_FILE lines its commands
// run first (which may hold what a hook exported, secrets included: the
// same as its query in the Web UI shows).
func cmdSessionShow(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("session show", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	conversation := fs.String("conversation", "", "the conversation_id whose session to show")
	taskQueue := fs.String("task-queue", envOr("FENIX_TASK_QUEUE", workflows.DefaultTaskQueue), "the workers' task queue (env FENIX_TASK_QUEUE)")
	asJSON := fs.Bool("json", false, "print the session's state as JSON")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 || *conversation == "" {
		return exitUsage, usageError{sessionUsage}
	}
	conn, err := connect(ctx)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	st, err := sessions.State(ctx, conn.Client, *taskQueue, *conversation)
	if err != nil {
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return exitFailed, fmt.Errorf("conversation %q has no session (no run of it since the last end, or it was forgotten)", *conversation)
		}
		return exitFailed, err
	}
	if *asJSON {
		return exitOK, writeJSON(c.stdout, st)
	}
	state := "running"
	switch {
	case !st.Started:
		state = "not started"
	case st.Ended:
		state = "ended (" + st.EndReason + ")"
	}
	fmt.Fprintf(c.stdout, "Session of conversation %s: %s\n", st.ConversationID, state)
	fmt.Fprintf(c.stdout, "SessionStart sources: %s\n", strings.Join(st.Sources, ", "))
	fmt.Fprintf(c.stdout, "Touches: %d, last %s\n", st.Touches, st.LastTouch.Format(time.RFC3339))
	if st.EnvPendingSince != nil {
		fmt.Fprintf(c.stdout, "Session environment: still to come from the SessionStart hooks started %s\n", st.EnvPendingSince.Format(time.RFC3339))
	}
	if st.Env == "" {
		fmt.Fprintln(c.stdout, "Session environment: none ($CLAUDE_ENV_FILE was not written)")
		return exitOK, nil
	}
	fmt.Fprintln(c.stdout, "Session environment (run before every exec_command and process_exec):")
	for _, line := range strings.Split(strings.TrimRight(st.Env, "\n"), "\n") {
		fmt.Fprintln(c.stdout, "  "+contract.Printable(line))
	}
	return exitOK, nil
}
