package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/procs"
)

func init() { register(commandRunReadTool()) }

// CommandRunReadArgs are command_run_read's arguments.
type CommandRunReadArgs struct {
	CommandRunID string `json:"command_run_id" jsonschema:"minLength=1,maxLength=128,pattern=^cmd_[a-z0-9-]+_[0-9a-f]{16}$,description=The command_run_id an exec_command call returned"`
	Stream       string `json:"stream,omitempty" jsonschema:"enum=both,enum=stdout,enum=stderr,description=Which output to read (default both)"`
	Offset       *int64 `json:"offset,omitempty" jsonschema:"minimum=0,description=Read forward from this byte offset of the stream instead of its tail; needs stream stdout or stderr"`
	MaxBytes     int    `json:"max_bytes,omitempty" jsonschema:"minimum=1,maximum=262144,description=Bytes per stream to return (default 32768)"`
}

// StreamWindow is part of one output stream.
type StreamWindow struct {
	Text string `json:"text"`
	// Offset is the stream offset of Text's first byte; Total the stream's
	// size so far.
	Offset int64 `json:"offset"`
	// End is the offset after the window: pass it as offset to read on.
	End   int64 `json:"end"`
	Total int64 `json:"total"`
	// KeptFrom is the oldest offset still kept; earlier bytes are gone.
	KeptFrom int64 `json:"kept_from"`
	// More is set when bytes after this window exist.
	More bool `json:"more,omitempty"`
}

// CommandRunReadResult is command_run_read's raw result.
type CommandRunReadResult struct {
	CommandRunID string        `json:"command_run_id"`
	CommandLine  string        `json:"command_line"`
	Cwd          string        `json:"cwd"`
	Status       string        `json:"status"`
	ExitStatus   *int          `json:"exit_status,omitempty"`
	Signal       string        `json:"signal,omitempty"`
	Reason       string        `json:"reason,omitempty"`
	StartedAt    time.Time     `json:"started_at"`
	FinishedAt   *time.Time    `json:"finished_at,omitempty"`
	TimeoutSecs  int           `json:"timeout_seconds"`
	Stdout       *StreamWindow `json:"stdout,omitempty"`
	Stderr       *StreamWindow `json:"stderr,omitempty"`
}

func commandRunReadTool() Definition {
	return Define(Spec{
		Name:           "command_run_read",
		Description:    "Read the status and output of an earlier exec_command run by its command_run_id, from its tail or from a byte offset.",
		ReadOnly:       true,
		RegistryBacked: true,
		Idempotent:     true,
		Timeout:        30 * time.Second,
		Owner:          stringArg("command_run_id"),
	}, readCommandRun, projectCommandRun)
}

// stringArg returns an Owner function reading one string argument.
func stringArg(name string) func(map[string]any) string {
	return func(args map[string]any) string {
		s, _ := args[name].(string)
		return s
	}
}

func readCommandRun(_ context.Context, env *Env, a CommandRunReadArgs) (CommandRunReadResult, error) {
	const tool = "command_run_read"
	h, err := requireHost(env, tool)
	if err != nil {
		return CommandRunReadResult{}, err
	}
	if err := h.requireOwner(tool, a.CommandRunID); err != nil {
		return CommandRunReadResult{}, err
	}
	stream := a.Stream
	if stream == "" {
		stream = "both"
	}
	if a.Offset != nil && stream == "both" {
		return CommandRunReadResult{}, fenixerr.Validation("offset reads one stream: set stream to \"stdout\" or \"stderr\"").WithTool(tool)
	}
	max := a.MaxBytes
	if max == 0 {
		max = 32 << 10
	}
	rec, err := h.runs.Get(a.CommandRunID)
	if errors.Is(err, procs.ErrNotFound) {
		return CommandRunReadResult{}, fenixerr.Validation("command run %s is not known on host %s (finished runs are kept until %d newer ones replace them)", a.CommandRunID, h.ID, h.cfg.Exec.KeepRuns).WithTool(tool).WithCode("not_found")
	}
	if err != nil {
		return CommandRunReadResult{}, fenixerr.Runtime("reading command run %s: %v", a.CommandRunID, err).WithTool(tool)
	}
	if !sameConversation(env, rec.ConversationID) {
		return CommandRunReadResult{}, fenixerr.Validation("command run %s on host %s was started by another conversation; %s only reads this conversation's runs", a.CommandRunID, h.ID, tool).WithTool(tool).WithCode("other_conversation")
	}
	res := CommandRunReadResult{
		CommandRunID: rec.ID, CommandLine: rec.CommandLine, Cwd: rec.Cwd, Status: rec.Status,
		ExitStatus: rec.ExitStatus, Signal: rec.Signal, Reason: rec.Reason,
		StartedAt: rec.StartedAt, FinishedAt: rec.FinishedAt, TimeoutSecs: rec.TimeoutSeconds,
	}
	if stream != "stderr" {
		res.Stdout = window(rec.Stdout, a.Offset, max)
	}
	if stream != "stdout" {
		res.Stderr = window(rec.Stderr, a.Offset, max)
	}
	return res, nil
}

func window(c procs.StreamCapture, offset *int64, max int) *StreamWindow {
	var data []byte
	var start int64
	if offset == nil {
		data, start = c.Data, c.Start
		if len(data) > max {
			start += int64(len(data) - max)
			data = data[len(data)-max:]
		}
	} else {
		data, start = procs.Window(c.Data, c.Start, *offset, max)
	}
	// Two streams share the result budget.
	text, clipped := clipForJSON(procs.ValidText(data, start > c.Start), resultTextBudget/2)
	end := start + int64(len(data))
	if clipped {
		// Exact when the output was valid UTF-8, which clipping needs most.
		end = start + int64(len(text))
	}
	return &StreamWindow{
		Text:     text,
		Offset:   start,
		End:      end,
		Total:    c.Total,
		KeptFrom: c.Start,
		More:     end < c.Total,
	}
}

func projectCommandRun(_ CommandRunReadArgs, r CommandRunReadResult) Projection {
	var b strings.Builder
	fmt.Fprintf(&b, "Command run %s %s.", r.CommandRunID, describeRunStatus(r.Status, r.ExitStatus))
	switch r.Reason {
	case procs.ReasonTimeout:
		fmt.Fprintf(&b, " It was killed because it ran past its %ds timeout.", r.TimeoutSecs)
	case procs.ReasonOutputLimit:
		b.WriteString(" It was killed because its output passed the host's output limit.")
	case procs.ReasonProcessLimit:
		b.WriteString(" It was killed because it started more processes than the host allows.")
	case procs.ReasonOutOfMemory:
		b.WriteString(" " + outOfMemoryExplanation)
	case procs.ReasonDiskReserve:
		b.WriteString(" " + diskReserveExplanation)
	case procs.ReasonWorkerLost:
		if r.ExitStatus == nil {
			b.WriteString(" The worker running it was lost (killed or crashed); the restarted worker killed what was left of its process group. Its output was not kept.")
		} else {
			b.WriteString(" The worker running it was lost: it lost contact with Temporal, so its call could not complete, and it killed the command's process group then.")
		}
	}
	fmt.Fprintf(&b, "\nCommand: %s", r.CommandLine)
	for _, s := range []struct {
		name string
		w    *StreamWindow
	}{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		if s.w == nil {
			continue
		}
		if s.w.Total == 0 {
			fmt.Fprintf(&b, "\n\n%s: (empty)", s.name)
			continue
		}
		text := strings.TrimSuffix(s.w.Text, "\n")
		if s.w.Offset == 0 && !s.w.More {
			fmt.Fprintf(&b, "\n\n%s:\n%s", s.name, text)
		} else {
			fmt.Fprintf(&b, "\n\n%s (bytes %d-%d of %d):\n%s", s.name, s.w.Offset, s.w.End, s.w.Total, text)
		}
	}
	meta := map[string]any{
		"command_run_id": r.CommandRunID,
		"status":         r.Status,
		"reason":         r.Reason,
	}
	if r.ExitStatus != nil {
		meta["exit_status"] = *r.ExitStatus
	}
	if r.Stdout != nil {
		meta["stdout_bytes"] = r.Stdout.Total
	}
	if r.Stderr != nil {
		meta["stderr_bytes"] = r.Stderr.Total
	}
	return Projection{Content: b.String(), Metadata: meta}
}

func describeRunStatus(status string, exit *int) string {
	code := func() string {
		if exit == nil {
			return "?"
		}
		return fmt.Sprint(*exit)
	}
	switch status {
	case procs.RunRunning:
		return "is still running"
	case procs.RunExited:
		return "exited with status " + code()
	case procs.RunTimedOut:
		return "timed out and exited with status " + code()
	case procs.RunCanceled:
		return "was canceled and exited with status " + code()
	default:
		if exit == nil {
			return "was killed (exit status unknown)"
		}
		return "was killed and exited with status " + code()
	}
}
