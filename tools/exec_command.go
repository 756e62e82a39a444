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
	// ProtectedPathsChanged are the protected paths (settings, hook
	// scripts, MCP configurations, git config and hooks) the command
	// wrote, created or removed: a shell is not confined like the
	// workspace tools, so what it did to them is reported for the audit.
	ProtectedPathsChanged []string `json:"protected_paths_changed,omitempty"`
}

func execCommandTool() Definition {
	return Define(Spec{
		Name:           execCommandName,
		Description:    "Run a shell command in the workspace and return its exit status and output. Output streams while it runs; the command is killed on timeout or cancellation.",
		RegistryBacked: true,
		NeedsWorkspace: true,
		Timeout:        time.Hour + 2*time.Minute,
		Heartbeat:      30 * time.Second,
	}, executeCommand, projectCommand)
}

func executeCommand(ctx context.Context, env *Env, a ExecCommandArgs) (ExecCommandResult, error) {
	h, err := requireHost(env, execCommandName)
	if err != nil {
		return ExecCommandResult{}, err
	}
	plan, err := planCommand(env, h, a)
	if err != nil {
		return ExecCommandResult{}, err
	}
	conf, err := h.commandConfinement(execCommandName)
	if err != nil {
		return ExecCommandResult{}, err
	}
	// Before the state is taken: listing them may make .git/hooks.
	readOnly := conf.readOnly(env.Workspace)
	protectedBefore := env.Workspace.ProtectedState()
	rec, proc, err := startCommandRun(env, h, plan, conf, readOnly)
	if err != nil {
		return ExecCommandResult{}, err
	}
	env.reportResource(rec.ID)
	ctxErr := superviseCommand(ctx, env, proc, plan.timeout, h.cfg.Exec.KillGrace)
	rec, err = h.runs.Finish(rec, proc)
	if err != nil && env.Logger != nil {
		env.Logger.Warn("command run record not persisted", "command_run_id", rec.ID, "error", err)
	}
	changed := protectedBefore.Changed(env.Workspace.ProtectedState())
	if len(changed) > 0 && env.Logger != nil {
		env.Logger.Warn("command changed protected paths; the loaded hooks and settings keep governing until an operator reloads them",
			"command_run_id", rec.ID, "paths", changed)
	}
	if ctxErr != nil {
		return ExecCommandResult{}, commandInterrupted(rec, ctxErr)
	}
	res := commandResult(h, plan, rec, proc)
	res.ProtectedPathsChanged = changed
	return res, nil
}

const execCommandName = "exec_command"

// commandPlan is how one exec_command call runs: where, with what
// environment, for how long and under which limits.
type commandPlan struct {
	commandLine string
	cwd         string // as given, "." by default
	dir         string // resolved in the workspace
	env         []string
	// prelude runs before the line in its shell (commandPrelude).
	prelude string
	timeout time.Duration
	limits  procs.Limits
}

// validCommandLine refuses a command line no process can be given: a NUL
// byte ends a C string, and the kernel refused the shell's start, which
// was reported as the tool being unavailable ("fork/exec /bin/sh: invalid
// argument") instead of as the caller's bad argument.
func validCommandLine(tool, line string) error {
	if i := strings.IndexByte(line, 0); i >= 0 {
		return fenixerr.Validation("command_line contains a NUL byte (at byte %d), which no shell line can hold", i).WithTool(tool)
	}
	return nil
}

// planCommand resolves the call's arguments against the workspace and the
// host's exec settings.
func planCommand(env *Env, h *Host, a ExecCommandArgs) (commandPlan, error) {
	if err := validCommandLine(execCommandName, a.CommandLine); err != nil {
		return commandPlan{}, err
	}
	p := commandPlan{commandLine: a.CommandLine}
	var err error
	if p.cwd, p.dir, err = resolveCwd(env, a.Cwd); err != nil {
		return commandPlan{}, err
	}
	if p.env, err = h.commandEnv(execCommandName, env.Workspace.Dir(), a.Env); err != nil {
		return commandPlan{}, err
	}
	p.prelude = commandPrelude(env.SessionEnv, a.Env)
	p.timeout = h.cfg.Exec.DefaultTimeout
	if a.TimeoutSeconds > 0 {
		p.timeout = min(time.Duration(a.TimeoutSeconds)*time.Second, h.cfg.Exec.MaxTimeout)
	}
	p.limits = h.cfg.Exec.Limits
	if p.limits.CPUSeconds == 0 {
		p.limits.CPUSeconds = int((p.timeout + time.Second - 1) / time.Second)
	}
	return p, nil
}

// startCommandRun mints the run's ID and starts the command. The run is on
// disk, as running, before the command runs: if the worker dies, the next
// one on this data directory reaps it.
func startCommandRun(env *Env, h *Host, p commandPlan, conf *commandConfinement, readOnly []string) (procs.CommandRun, *procs.Process, error) {
	id, err := NewResourceID(ResourceCommandRun, h.ID)
	if err != nil {
		return procs.CommandRun{}, nil, fenixerr.Runtime("minting a command run ID: %v", err)
	}
	var rec procs.CommandRun
	proc, err := procs.Start(procs.Spec{
		CommandLine: p.commandLine,
		Prelude:     p.prelude,
		Dir:         p.dir,
		Env:         p.env,
		Limits:      p.limits,
		KeepFree:    []string{h.cfg.DataDir},
		User:        h.cfg.CommandUser,
		Confiner:    conf.confiner,
		Workspace:   env.Workspace.Dir(),
		ReadOnly:    readOnly,
		SignalGroup: env.ConversationID,
		NetworkAsk:  env.AskNetwork,
		KeepBytes:   h.cfg.Exec.KeepBytes,
		BeforeRun: func(proc *procs.Process) error {
			rec = procs.CommandRun{
				ID:             id,
				CommandLine:    p.commandLine,
				Cwd:            cwdLabel(p.cwd),
				CallID:         env.CallID,
				ConversationID: env.ConversationID,
				TurnID:         env.TurnID,
				TimeoutSeconds: int(p.timeout / time.Second),
				PID:            proc.PID(),
				StartedAt:      proc.StartedAt().UTC(),
			}
			return h.runs.Begin(rec, proc)
		},
	})
	if err != nil {
		return procs.CommandRun{}, nil, notStarted(execCommandName, p.commandLine, err)
	}
	return rec, proc, nil
}

// notStarted is the error of a command tool whose command could not start:
// a worker out of descriptors or processes is named as the cause, with
// its own code, whatever step of the start met it.
func notStarted(tool, commandLine string, err error) *fenixerr.Error {
	if why := procs.Exhausted(err); why != "" {
		return fenixerr.New(fenixerr.TypeToolUnavailable, "%s could not start %q, which did not run: %s (%v)", tool, commandLine, why, err).
			WithTool(tool).WithCode(procs.CodeWorkerExhausted).WithCause(err)
	}
	return fenixerr.New(fenixerr.TypeToolUnavailable, "%s could not start %q: %v", tool, commandLine, err).WithTool(tool).WithCause(err)
}

// superviseCommand streams the command's output and heartbeats until it
// ends, killing it at its timeout or when ctx ends. It returns why ctx
// ended, or nil when the command ended first.
func superviseCommand(ctx context.Context, env *Env, proc *procs.Process, timeout, grace time.Duration) error {
	streams := []*outputStream{
		{name: "stdout", tail: proc.Stdout()},
		{name: "stderr", tail: proc.Stderr()},
	}
	defer func() {
		for _, s := range streams {
			s.flush(env, true)
		}
	}()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	flushTicker := time.NewTicker(progressInterval)
	defer flushTicker.Stop()
	beatTicker := time.NewTicker(heartbeatInterval)
	defer beatTicker.Stop()
	for {
		select {
		case <-proc.Done():
			return nil
		case <-deadline.C:
			proc.Stop(procs.ReasonTimeout, grace)
			return nil
		case <-ctx.Done():
			ctxErr, reason := ctx.Err(), procs.ReasonCanceled
			if env.contactLost() {
				// Nobody can receive this call's result any more: the run
				// is an orphan, and is recorded as one.
				ctxErr, reason = context.Cause(ctx), procs.ReasonWorkerLost
			}
			proc.Stop(reason, grace)
			return ctxErr
		case <-flushTicker.C:
			for _, s := range streams {
				s.flush(env, false)
			}
		case <-beatTicker.C:
			env.heartbeat()
		}
	}
}

// commandInterrupted is the error of a call whose context ended before
// its command did.
func commandInterrupted(rec procs.CommandRun, ctxErr error) error {
	switch {
	case rec.Reason == procs.ReasonWorkerLost:
		return fenixerr.New(fenixerr.TypeWorkerLost, "exec_command %s: this worker lost contact with Temporal (%v), so the call's result could not be recorded; its process group was killed", rec.ID, ctxErr).WithTool(execCommandName).WithCause(ctxErr)
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return fenixerr.New(fenixerr.TypeToolTimeout, "exec_command %s ran past the activity deadline; its process group was killed", rec.ID).WithTool(execCommandName).WithCause(ctxErr)
	default:
		return fenixerr.New(fenixerr.TypeCanceled, "exec_command %s was canceled; its process group was killed", rec.ID).WithTool(execCommandName).WithCause(ctxErr)
	}
}

// commandResult is the call's result for a finished run.
func commandResult(h *Host, p commandPlan, rec procs.CommandRun, proc *procs.Process) ExecCommandResult {
	exit := proc.Exit()
	res := ExecCommandResult{
		CommandRunID:   rec.ID,
		HostID:         h.ID,
		CommandLine:    rec.CommandLine,
		Cwd:            rec.Cwd,
		Status:         rec.Status,
		ExitStatus:     exit.Code,
		Signal:         exit.Signal,
		Reason:         exit.Reason,
		TimeoutSeconds: rec.TimeoutSeconds,
		PID:            rec.PID,
		DurationMS:     exit.EndedAt.Sub(exit.StartedAt).Milliseconds(),
		StartedAt:      rec.StartedAt,
		FinishedAt:     *rec.FinishedAt,
		MaxProcesses:   p.limits.MaxProcesses,
		MaxOutputBytes: p.limits.MaxOutputBytes,
	}
	res.Stdout, res.StdoutBytes, res.StdoutTruncated = tailText(proc.Stdout(), h.cfg.Exec.ResultBytes)
	res.Stderr, res.StderrBytes, res.StderrTruncated = tailText(proc.Stderr(), h.cfg.Exec.ResultBytes)
	return res
}

// resolveCwd resolves a command's working directory in the workspace;
// cwd is as given, "." when empty, and dir the absolute path.
func resolveCwd(env *Env, given string) (cwd, dir string, err error) {
	cwd = given
	if cwd == "" {
		cwd = "."
	}
	dir, err = env.Workspace.Resolve(cwd)
	return cwd, dir, err
}

// cwdLabel is how a run's working directory is shown: cleaned when it is
// a valid workspace path.
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
	b.WriteString(ProtectedChangeNote(r.ProtectedPathsChanged))
	writeStreams(&b, r.CommandRunID, []streamView{
		{"stdout", r.Stdout, r.StdoutBytes, r.StdoutTruncated},
		{"stderr", r.Stderr, r.StderrBytes, r.StderrTruncated},
	})
	meta := map[string]any{
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
	}
	if len(r.ProtectedPathsChanged) > 0 {
		meta["protected_paths_changed"] = r.ProtectedPathsChanged
	}
	return Projection{Content: b.String(), Metadata: meta}
}

// ProtectedChangeNote tells the model, after a tool call that changed
// protected paths (settings, hook scripts, .mcp.json), that the change
// did not take: "" when paths is empty.
func ProtectedChangeNote(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	return fmt.Sprintf(" It changed protected paths (%s): the hooks, settings and MCP servers already loaded keep governing until an operator accepts the change, and the change is in the audit record.",
		strings.Join(paths, ", "))
}

// outOfMemoryExplanation is what the model reads of a command the
// kernel's out-of-memory killer ended.
const outOfMemoryExplanation = "It was killed by the kernel because memory ran out while it ran: it or something it started needed more memory than the host could give."

// diskReserveExplanation is what the model reads of a command killed for
// filling its disk.
const diskReserveExplanation = "It was killed because the disk it wrote to (its workspace's or its temporary directory's) ran nearly full: the host keeps free space for its own records and other work."

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
	case procs.ReasonOutOfMemory:
		return outOfMemoryExplanation
	case procs.ReasonDiskReserve:
		return diskReserveExplanation
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
