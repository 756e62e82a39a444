package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"go.temporal.io/api/serviceerror"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/sessions"
	"github.com/fenixrt/fenix/workflows"
)

// cmdSession is `session end -conversation ID [-reason R]`: the kernel
// ending a conversation's Claude Code session, so its SessionEnd hooks run.
func cmdSession(ctx context.Context, c *cli, args []string) (int, error) {
	if len(args) == 0 || args[0] != "end" {
		return exitUsage, usageError{"expected: session end -conversation ID [-reason REASON]"}
	}
	fs := flag.NewFlagSet("session end", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	conversation := fs.String("conversation", "", "the conversation_id whose session ends")
	taskQueue := fs.String("task-queue", envOr("FENIX_TASK_QUEUE", workflows.DefaultTaskQueue), "the workers' task queue (env FENIX_TASK_QUEUE)")
	reason := fs.String("reason", hooks.EndReasonPromptInputExit, "SessionEnd reason: "+strings.Join(hooks.EndReasons, ", "))
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 || *conversation == "" {
		return exitUsage, usageError{"expected: session end -conversation ID [-reason REASON]"}
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
