package claudecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/proctree"
)

// maxCommandOutput caps what is kept of a command hook's stderr, and
// maxCommandAnswer of its stdout, its answer: room for an updatedInput of
// the largest arguments (1 MiB and 64 KiB) with every character escaped
// six bytes long, as python's json.dumps writes é.
const (
	maxCommandOutput = 1 << 20
	maxCommandAnswer = 8 << 20
)

// commandWaitDelay bounds how long a finished command's leftover children
// may hold its output pipes open.
const commandWaitDelay = time.Second

// commandTransport runs a hook as a process: shell form (command through
// sh -c, or the shell the handler names) or exec form (command resolved on
// PATH and spawned with args, no shell). The process runs in the event's
// workspace (else the settings file's directory) in its own process group,
// and its own process tree (see processTree), which is killed when the
// command times out, when ctx is cancelled and when the command ends, so
// a hook's processes never outlive it, however they detach. It keeps its
// own deadline, which time the tree was held up by others does not count
// toward (see waitWithin).
type commandTransport struct {
	command string
	args    []string
	// execForm is set when the handler has "args" (possibly empty).
	execForm bool
	shell    string
	// written and writtenArgs are the command as the settings file has
	// it, before its scripts were pinned: what the hook is named and
	// deduplicated by.
	written     string
	writtenArgs []string
	// scripts are the files the command launches (see scriptFiles): a
	// missing one means the hook could not start.
	scripts []string
	// absent are scripts missing at load (CommandHookConfig.Absent).
	absent []string
	// inWorkspace, when set, pins the scripts the command names from the
	// workspace at its first run in each.
	inWorkspace *workspacePins
}

// program names what the command runs, for "could not start" messages.
func (t *commandTransport) program() string {
	if len(t.scripts) > 0 {
		return t.scripts[0]
	}
	if t.execForm {
		return t.command
	}
	return ""
}

func (t *commandTransport) kind() string { return "command" }

// timesItself: the hook's timeout is applied by call (waitWithin), not by
// a deadline on its context.
func (t *commandTransport) timesItself() {}

func (t *commandTransport) describe() string {
	if t.execForm && len(t.writtenArgs) > 0 {
		return t.written + " " + strings.Join(t.writtenArgs, " ")
	}
	return t.written
}

// identity is what Claude Code deduplicates command hooks by.
func (t *commandTransport) identity() string {
	return "command\x00" + t.written + "\x00" + strings.Join(t.writtenArgs, "\x00")
}

func (t *commandTransport) call(ctx context.Context, h *ExternalHook, s hooks.Session, payload []byte) (outcome, error) {
	env := h.environment(s)
	dir := h.workDir(s)
	command, args, scripts, absent := t.command, t.args, t.scripts, t.absent
	absentWhen := "when the hook settings were loaded"
	if t.inWorkspace != nil && s.WorkspaceRoot != "" {
		pin := t.inWorkspace.in(s.WorkspaceRoot, h.logger)
		if pin.err != nil {
			return outcome{}, &notStartedError{command: t.describe(), err: fmt.Errorf("pinning its scripts in workspace %s: %w", s.WorkspaceRoot, pin.err)}
		}
		command, args, scripts, absent = pin.command, pin.args, pin.scripts, pin.absent
		absentWhen = "when the hook first ran in this workspace"
	}
	for _, f := range scripts {
		if slices.Contains(absent, f) {
			return outcome{}, &notStartedError{command: t.describe(), file: f,
				err: fmt.Errorf("%s did not exist %s, and the worker runs hook scripts as they were then: reload the hooks (SIGHUP) to run it", f, absentWhen)}
		}
	}
	if missing := missingScript(scripts); missing != "" {
		return outcome{}, &notStartedError{command: t.describe(), file: missing, err: fmt.Errorf("%s does not exist", missing)}
	}
	var envFile *envFile
	if h.WritesSessionEnv() {
		var err error
		if envFile, err = newEnvFile(); err != nil {
			return outcome{}, fmt.Errorf("creating its CLAUDE_ENV_FILE: %w", err)
		}
		defer envFile.remove()
		env["CLAUDE_ENV_FILE"] = envFile.path
	}
	var cmd *exec.Cmd
	if t.execForm {
		name := expandPlaceholders(command, env)
		expanded := make([]string, len(args))
		for i, a := range args {
			expanded[i] = expandPlaceholders(a, env)
		}
		cmd = exec.CommandContext(ctx, name, expanded...)
	} else {
		shell := "/bin/sh"
		if t.shell == "bash" {
			shell = "bash"
		}
		cmd = exec.CommandContext(ctx, shell, "-c", command)
	}
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(payload)
	stdout := &cappedBuffer{max: maxCommandAnswer}
	stderr := &cappedBuffer{max: maxCommandOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = hookEnv(processEnv(), h.workerEnv, h.settingsEnv, env)
	cmd.WaitDelay = commandWaitDelay
	tree := newProcessTree(cmd)

	var runErr, expired error
	release := func() {}
	if h.launcher != nil {
		if release, runErr = h.launcher.Start(cmd, s.WorkspaceRoot); runErr != nil && !programNotStarted(runErr) {
			tree.close()
			return outcome{}, &unconfinedError{err: runErr}
		}
	} else {
		runErr = cmd.Start()
	}
	if runErr == nil {
		// A hook, like a command, goes before the worker when memory runs
		// out (what it started in its first instant keeps the default).
		_ = proctree.PreferOOMKill(cmd.Process.Pid)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		runErr, expired = waitWithin(done, h.timeout, tree)
		release()
	}
	tree.close()
	if errors.Is(runErr, exec.ErrWaitDelay) {
		// The command exited; a descendant held its output open until
		// the tree was killed.
		runErr = nil
	}

	if cmd.ProcessState == nil {
		return outcome{}, &notStartedError{command: t.describe(), file: t.program(), dir: dir, err: runErr}
	}
	// A command that exited on its own before the deadline keeps its result
	// even if the deadline passed while it was being collected.
	if !cmd.ProcessState.Exited() {
		if ctx.Err() != nil {
			return outcome{}, ctx.Err()
		}
		if expired != nil {
			return outcome{}, expired
		}
	}
	code := cmd.ProcessState.ExitCode()
	if !t.execForm && shellNotStarted(code, stderr.String()) {
		return outcome{}, &notStartedError{command: t.describe(), file: t.program(), dir: dir,
			err: fmt.Errorf("exit status %d%s", code, suffix(stderr.String()))}
	}
	if sig, ok := shellReportedKill(code); ok {
		return outcome{}, &killedError{signal: sig, status: code}
	}
	if code == -1 {
		if sig, ok := killedFromOutside(cmd.ProcessState); ok {
			return outcome{}, &killedError{signal: sig}
		}
		return outcome{}, fmt.Errorf("command %q was killed (%v)%s", t.describe(), cmd.ProcessState, suffix(stderr.String()))
	}
	if runErr != nil && !errors.As(runErr, new(*exec.ExitError)) {
		return outcome{}, fmt.Errorf("command %q: %w", t.describe(), runErr)
	}
	if stdout.dropped > 0 && bytes.HasPrefix(bytes.TrimSpace(stdout.Bytes()), []byte("{")) {
		// JSON cut short: its decision is lost, and a deny read as the
		// text of a hook that allowed.
		return outcome{}, &oversizedAnswerError{command: t.describe(), limit: maxCommandAnswer, size: int64(stdout.buf.Len()) + stdout.dropped}
	}
	o := outcome{exitCode: code, stdout: stdout.Bytes(), stderr: stderr.String()}
	if envFile != nil {
		lines, err := envFile.lines(ctx)
		o.sessionEnv = lines
		if err != nil {
			o.sessionEnvErr = fmt.Errorf("its CLAUDE_ENV_FILE is not applied: %w", err)
		}
	}
	return o, nil
}

// expandPlaceholders substitutes ${NAME} and $NAME for the path
// placeholders Claude Code substitutes in exec form.
func expandPlaceholders(s string, env map[string]string) string {
	for _, name := range []string{"CLAUDE_PROJECT_DIR", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA"} {
		v, ok := env[name]
		if !ok {
			continue
		}
		s = strings.ReplaceAll(s, "${"+name+"}", v)
		s = strings.ReplaceAll(s, "$"+name, v)
	}
	return s
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// cappedBuffer keeps the first max bytes written and discards the rest, so a
// chatty hook cannot exhaust memory; writes never fail, so the command is
// never killed by a broken pipe.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
	// dropped counts the bytes written past max.
	dropped int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	kept := p
	if room := b.max - b.buf.Len(); len(p) > room {
		kept = p[:max(room, 0)]
	}
	b.buf.Write(kept)
	b.dropped += int64(len(p) - len(kept))
	return len(p), nil
}

func (b *cappedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *cappedBuffer) String() string { return b.buf.String() }
