package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/procs"
	"github.com/fenixrt/fenix/workspace"
)

func init() { register(execCommandTool()) }

// Streaming and keep-alive cadence of exec_command.
const (
	// progressInterval bounds Progress calls to four per second per stream,
	// each carrying at most progressChunkBytes (the newest bytes win).
	progressInterval   = 250 * time.Millisecond
	progressChunkBytes = 32 << 10
	heartbeatInterval  = 5 * time.Second
)

// ExecCommandArgs are exec_command's arguments.
type ExecCommandArgs struct {
	CommandLine    string            `json:"command_line" jsonschema:"minLength=1,maxLength=65536,description=Shell command line; runs with sh -c in the workspace"`
	Cwd            string            `json:"cwd,omitempty" jsonschema:"maxLength=4096,description=Working directory relative to the workspace root (default: the root)"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty" jsonschema:"minimum=1,maximum=3600,description=Kill the command after this many seconds (default 60; the host caps it)"`
	Env            map[string]string `json:"env,omitempty" jsonschema:"description=Extra environment variables for the command"`
}

// ExecCommandResult is exec_command's raw result. Stdout and Stderr hold
// the tail of each stream; the registry keeps more (command_run_read).
type ExecCommandResult struct {
	CommandRunID   string `json:"command_run_id"`
	HostID         string `json:"host_id"`
	CommandLine    string `json:"command_line"`
	Cwd            string `json:"cwd"`
	Status         string `json:"status"`
	ExitStatus     int    `json:"exit_status"`
	Signal         string `json:"signal,omitempty"`
	Reason         string `json:"reason,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds"`
	// PID is the shell's process ID, which is also its process group ID.
	PID             int       `json:"pid"`
	DurationMS      int64     `json:"duration_ms"`
	StartedAt       time.Time `json:"started_at"`
	FinishedAt      time.Time `json:"finished_at"`
	Stdout          string    `json:"stdout"`
	Stderr          string    `json:"stderr"`
	StdoutBytes     int64     `json:"stdout_bytes"`
	StderrBytes     int64     `json:"stderr_bytes"`
	StdoutTruncated bool      `json:"stdout_truncated,omitempty"`
	StderrTruncated bool      `json:"stderr_truncated,omitempty"`
	// Limits are the ones the command ran under, for the record.
	MaxProcesses   int   `json:"max_processes"`
	MaxOutputBytes int64 `json:"max_output_bytes"`
}

func execCommandTool() Definition {
	return Define(Spec{
		Name:           "exec_command",
		Description:    "Run a shell command in the workspace and return its exit status and output. Output streams while it runs; the command is killed on timeout or cancellation.",
		RegistryBacked: true,
		NeedsWorkspace: true,
		Timeout:        time.Hour + 2*time.Minute,
		Heartbeat:      30 * time.Second,
	}, executeCommand, projectCommand)
}

func executeCommand(ctx context.Context, env *Env, a ExecCommandArgs) (ExecCommandResult, error) {
	const tool = "exec_command"
	h, err := requireHost(env, tool)
	if err != nil {
		return ExecCommandResult{}, err
	}
	cwd := a.Cwd
	if cwd == "" {
		cwd = "."
	}
	dir, err := env.Workspace.Resolve(cwd)
	if err != nil {
		return ExecCommandResult{}, err
	}
	vars, err := h.commandEnv(tool, env.Workspace.Dir(), a.Env)
	if err != nil {
		return ExecCommandResult{}, err
	}
	timeout := h.cfg.Exec.DefaultTimeout
	if a.TimeoutSeconds > 0 {
		timeout = min(time.Duration(a.TimeoutSeconds)*time.Second, h.cfg.Exec.MaxTimeout)
	}
	limits := h.cfg.Exec.Limits
	if limits.CPUSeconds == 0 {
		limits.CPUSeconds = int((timeout + time.Second - 1) / time.Second)
	}
	id, err := NewResourceID(ResourceCommandRun, h.ID)
	if err != nil {
		return ExecCommandResult{}, fenixerr.Runtime("minting a command run ID: %v", err)
	}
	var rec procs.CommandRun
	proc, err := procs.Start(procs.Spec{
		CommandLine: a.CommandLine,
		Dir:         dir,
		Env:         vars,
		Limits:      limits,
		KeepBytes:   h.cfg.Exec.KeepBytes,
		// The run is on disk, as running, before the command runs: if the
		// worker dies, the next one on this data directory reaps it.
		BeforeRun: func(p *procs.Process) error {
			rec = procs.CommandRun{
				ID:             id,
				CommandLine:    a.CommandLine,
				Cwd:            cwdLabel(cwd),
				CallID:         env.CallID,
				ConversationID: env.ConversationID,
				TurnID:         env.TurnID,
				TimeoutSeconds: int(timeout / time.Second),
				PID:            p.PID(),
				StartedAt:      p.StartedAt().UTC(),
			}
			return h.runs.Begin(rec, p)
		},
	})
	if err != nil {
		return ExecCommandResult{}, fenixerr.New(fenixerr.TypeToolUnavailable, "exec_command could not start %q: %v", a.CommandLine, err).WithTool(tool)
	}
	env.reportResource(id)

	streams := []*outputStream{
		{name: "stdout", tail: proc.Stdout()},
		{name: "stderr", tail: proc.Stderr()},
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	flushTicker := time.NewTicker(progressInterval)
	defer flushTicker.Stop()
	beatTicker := time.NewTicker(heartbeatInterval)
	defer beatTicker.Stop()

	var ctxErr error
wait:
	for {
		select {
		case <-proc.Done():
			break wait
		case <-deadline.C:
			proc.Stop(procs.ReasonTimeout, h.cfg.Exec.KillGrace)
			break wait
		case <-ctx.Done():
			ctxErr = ctx.Err()
			reason := procs.ReasonCanceled
			if env.contactLost() {
				// Nobody can receive this call's result any more: the run
				// is an orphan, and is recorded as one.
				reason = procs.ReasonWorkerLost
				ctxErr = context.Cause(ctx)
			}
			proc.Stop(reason, h.cfg.Exec.KillGrace)
			break wait
		case <-flushTicker.C:
			for _, s := range streams {
				s.flush(env, false)
			}
		case <-beatTicker.C:
			env.heartbeat()
		}
	}
	for _, s := range streams {
		s.flush(env, true)
	}

	exit := proc.Exit()
	rec.Status = procs.RunStatus(exit.Reason)
	code := exit.Code
	rec.ExitStatus = &code
	rec.Signal = exit.Signal
	rec.Reason = exit.Reason
	finished := exit.EndedAt.UTC()
	rec.FinishedAt = &finished
	rec.Stdout = procs.CaptureOf(proc.Stdout())
	rec.Stderr = procs.CaptureOf(proc.Stderr())
	if err := h.runs.Finish(rec); err != nil && env.Logger != nil {
		env.Logger.Warn("command run record not persisted", "command_run_id", id, "error", err)
	}

	if ctxErr != nil {
		if exit.Reason == procs.ReasonWorkerLost {
			return ExecCommandResult{}, fenixerr.New(fenixerr.TypeWorkerLost, "exec_command %s: this worker lost contact with Temporal (%v), so the call's result could not be recorded; its process group was killed", id, ctxErr).WithTool(tool).WithCause(ctxErr)
		}
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return ExecCommandResult{}, fenixerr.New(fenixerr.TypeToolTimeout, "exec_command %s ran past the activity deadline; its process group was killed", id).WithTool(tool).WithCause(ctxErr)
		}
		return ExecCommandResult{}, fenixerr.New(fenixerr.TypeCanceled, "exec_command %s was canceled; its process group was killed", id).WithTool(tool).WithCause(ctxErr)
	}

	res := ExecCommandResult{
		CommandRunID:   id,
		HostID:         h.ID,
		CommandLine:    a.CommandLine,
		Cwd:            rec.Cwd,
		Status:         rec.Status,
		ExitStatus:     exit.Code,
		Signal:         exit.Signal,
		Reason:         exit.Reason,
		TimeoutSeconds: rec.TimeoutSeconds,
		PID:            rec.PID,
		DurationMS:     exit.EndedAt.Sub(exit.StartedAt).Milliseconds(),
		StartedAt:      rec.StartedAt,
		FinishedAt:     finished,
		MaxProcesses:   limits.MaxProcesses,
		MaxOutputBytes: limits.MaxOutputBytes,
	}
	res.Stdout, res.StdoutBytes, res.StdoutTruncated = tailText(proc.Stdout(), h.cfg.Exec.ResultBytes)
	res.Stderr, res.StderrBytes, res.StderrTruncated = tailText(proc.Stderr(), h.cfg.Exec.ResultBytes)
	return res, nil
}

func cwdLabel(cwd string) string {
	if cleaned, err := workspace.Clean(cwd); err == nil {
		return cleaned
	}
	return cwd
}

// tailText returns the last max bytes of a stream as valid UTF-8, the
// stream's total size and whether anything was left out.
func tailText(t *procs.Tail, max int) (string, int64, bool) {
	data, start := t.Last(max)
	return procs.ValidText(data, start > 0), t.Total(), start > 0
}

// outputStream tracks how much of one stream has been streamed.
type outputStream struct {
	name string
	tail *procs.Tail
	sent int64
}

// flush sends what arrived since the last flush, at most
// progressChunkBytes of it (the newest). Unless final, a character split
// at the end waits for the next flush.
func (s *outputStream) flush(env *Env, final bool) {
	data, start := s.tail.Since(s.sent, progressChunkBytes)
	cut := start > s.sent
	if !final {
		data = data[:completeUTF8Prefix(data)]
	}
	if len(data) == 0 {
		return
	}
	env.progress(contract.ToolOutputChunk{
		CallID: env.CallID,
		Stream: s.name,
		Text:   procs.ValidText(data, cut),
		Offset: start,
	})
	s.sent = start + int64(len(data))
}

// completeUTF8Prefix is the length of b without a trailing incomplete
// UTF-8 sequence.
func completeUTF8Prefix(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			return len(b)
		}
	}
	return len(b)
}

func projectCommand(_ ExecCommandArgs, r ExecCommandResult) Projection {
	var b strings.Builder
	fmt.Fprintf(&b, "Command exited with status %d after streaming output.", r.ExitStatus)
	if why := killExplanation(r.Reason, r.TimeoutSeconds, r.MaxOutputBytes, r.MaxProcesses); why != "" {
		b.WriteString(" " + why)
	}
	writeStreams(&b, r.CommandRunID, []streamView{
		{"stdout", r.Stdout, r.StdoutBytes, r.StdoutTruncated},
		{"stderr", r.Stderr, r.StderrBytes, r.StderrTruncated},
	})
	return Projection{
		Content: b.String(),
		Metadata: map[string]any{
			"command_run_id": r.CommandRunID,
			"host_id":        r.HostID,
			"exit_status":    r.ExitStatus,
			"status":         r.Status,
			"signal":         r.Signal,
			"reason":         r.Reason,
			"cwd":            r.Cwd,
			"duration_ms":    r.DurationMS,
			"stdout_bytes":   r.StdoutBytes,
			"stderr_bytes":   r.StderrBytes,
		},
	}
}

func killExplanation(reason string, timeoutSeconds int, maxOutput int64, maxProcs int) string {
	switch reason {
	case procs.ReasonTimeout:
		return fmt.Sprintf("It was killed because it ran past its %ds timeout.", timeoutSeconds)
	case procs.ReasonOutputLimit:
		return fmt.Sprintf("It was killed because its output passed the %s limit.", byteSize(maxOutput))
	case procs.ReasonProcessLimit:
		return fmt.Sprintf("It was killed because it started more than %d processes.", maxProcs)
	case procs.ReasonCanceled:
		return "It was killed because the call was canceled."
	case procs.ReasonShutdown:
		return "It was killed because the worker shut down."
	case procs.ReasonWorkerLost:
		return "It was killed because the worker running it was lost or lost contact with Temporal."
	case procs.ReasonStopped:
		return "It was stopped."
	}
	return ""
}

type streamView struct {
	name      string
	text      string
	total     int64
	truncated bool
}

func writeStreams(b *strings.Builder, runID string, streams []streamView) {
	empty := true
	for _, s := range streams {
		if s.total == 0 {
			continue
		}
		empty = false
		// One trailing newline is dropped so blocks are separated evenly.
		text := strings.TrimSuffix(s.text, "\n")
		if s.truncated {
			fmt.Fprintf(b, "\n\n%s (last %s of %s; command_run_read %s reads more):\n%s", s.name, byteSize(int64(len(s.text))), byteSize(s.total), runID, text)
		} else {
			fmt.Fprintf(b, "\n\n%s:\n%s", s.name, text)
		}
	}
	if empty {
		b.WriteString("\n\n(no output)")
	}
}

// byteSize renders a byte count for people: 512 B, 32 KiB, 1.5 MiB.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	suffix := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}[exp]
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), suffix)
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
