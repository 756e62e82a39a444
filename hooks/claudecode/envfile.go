package claudecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/fenixrt/fenix/hooks"
)

// A Claude Code dialect SessionStart command hook gets $CLAUDE_ENV_FILE,
// as in Claude Code: a file where it writes shell lines (`export
// NODE_ENV=production`, or the `export -p` lines an nvm or venv setup
// left) for the session's later Bash commands. Claude Code sources the
// files in the shell of every such command; so does Fenix: the lines
// travel with the session (hooks.JoinSessionEnv) and exec_command and
// process_exec run them in the command's own shell, sandbox and user
// before the command, where they may be on another host hours later.
// That shell is sh, so bash's `declare -x NAME="value"` lines (what
// `export -p` prints) are read as the `export` they are; a file sh
// cannot parse is not applied, since it would stop every command.

// maxEnvFileBytes bounds one hook's $CLAUDE_ENV_FILE.
const maxEnvFileBytes = hooks.MaxSessionEnvBytes

// envFileCheckTimeout bounds sh -n on a hook's file.
const envFileCheckTimeout = 10 * time.Second

// envFileName is the file's name in its private directory, as Claude
// Code names a SessionStart hook's.
const envFileName = "sessionstart-hook.sh"

// envFile is one hook run's $CLAUDE_ENV_FILE, in a directory only the
// worker's user can enter, so a command of another user cannot add
// lines every later command would run.
type envFile struct {
	dir, path string
}

func newEnvFile() (*envFile, error) {
	dir, err := os.MkdirTemp("", "fenix-session-env-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, envFileName)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &envFile{dir: dir, path: path}, nil
}

func (f *envFile) remove() { os.RemoveAll(f.dir) }

// WritesSessionEnv: a Claude Code dialect SessionStart command hook gets
// $CLAUDE_ENV_FILE (hooks.SessionEnvWriter).
func (h *ExternalHook) WritesSessionEnv() bool {
	_, command := h.transport.(*commandTransport)
	return command && h.spec.event == hooks.EventSessionStart && h.dialect == DialectClaude && !h.async
}

// lines reads what the hook wrote, as sh lines: "" for nothing, an error
// naming why the file cannot be applied.
func (f *envFile) lines(ctx context.Context) (string, error) {
	content, err := readEnvFile(f.path)
	if err != nil || content == nil {
		return "", err
	}
	if len(bytes.TrimSpace(content)) == 0 {
		return "", nil
	}
	if bytes.IndexByte(content, 0) >= 0 {
		return "", fmt.Errorf("it holds a NUL byte, which no shell line can")
	}
	script := shLines(string(content))
	if err := checkShSyntax(ctx, script); err != nil {
		return "", err
	}
	return script, nil
}

// readEnvFile reads the file the hook left, without following a link a
// process put in its place and within maxEnvFileBytes; nil for none.
func readEnvFile(path string) ([]byte, error) {
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case os.IsNotExist(err):
		return nil, nil
	case errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("%s was replaced by a symbolic link", path)
	case err != nil:
		return nil, err
	}
	defer file.Close()
	info, err := file.Stat()
	switch {
	case err != nil:
		return nil, err
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s is no longer a regular file", path)
	case info.Size() > maxEnvFileBytes:
		return nil, fmt.Errorf("it holds %d bytes, over the limit of %d", info.Size(), maxEnvFileBytes)
	}
	content, err := io.ReadAll(io.LimitReader(file, maxEnvFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(content) > maxEnvFileBytes {
		return nil, fmt.Errorf("it holds over %d bytes, the limit", maxEnvFileBytes)
	}
	return content, nil
}

// declareExport is a line of bash's `export -p`: declare with the x flag
// (and maybe others), a name, and maybe a value in sh's own quoting.
var declareExport = regexp.MustCompile(`^declare -([A-Za-z]*)x([A-Za-z]*) ([A-Za-z_][A-Za-z0-9_]*)(=.*)?$`)

// shLines turns bash's `declare -x` lines into sh's `export`; arrays
// (-a, -A), which sh has not, are left out with a comment saying so.
func shLines(content string) string {
	lines := strings.Split(strings.TrimRight(content, "\n"), "\n")
	for i, line := range lines {
		m := declareExport.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if strings.ContainsAny(m[1]+m[2], "aA") {
			lines[i] = "# fenix: array " + m[3] + " left out (sh has no arrays)"
			continue
		}
		lines[i] = "export " + m[3] + m[4]
	}
	return strings.Join(lines, "\n") + "\n"
}

// checkShSyntax has sh parse script without running it, on its own
// deadline: a hook that used up its timeout just before it exited still
// gets its file read.
func checkShSyntax(ctx context.Context, script string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), envFileCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-n")
	cmd.Stdin = strings.NewReader(script)
	stderr := &cappedBuffer{max: 4 << 10}
	cmd.Stderr = stderr
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("sh -n did not finish within %s", envFileCheckTimeout)
		}
		return fmt.Errorf("sh cannot parse it (%v)%s", err, suffix(stderr.String()))
	}
	return nil
}
