package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools/procs"
)

// With FENIX_COMMAND_USER the agent's commands run as an account of their
// own. What governs the agent is the worker's: the hook scripts and
// settings (root-owned, in a workspace the command user may write to but,
// sticky, not rename in), the data directory with the audit database and
// the command-run records. A shell can no longer rewrite or move any of
// it, read it, or signal the worker; the agent's own work (files it
// creates) goes on, and process_exec runs as the same user.
func TestCommandUserCannotTouchWhatGovernsIt(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running commands as another user needs a root worker here")
	}
	u, err := procs.LookupUser("nobody")
	require.NoError(t, err)
	project := guardedProject(t)
	// The command user reaches the workspace and may write in it; the
	// sticky bit keeps it from renaming what it does not own.
	for dir := filepath.Dir(project); dir != os.TempDir() && dir != "/"; dir = filepath.Dir(dir) {
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	require.NoError(t, os.Chmod(project, 0o777|os.ModeSticky))
	dataParent := t.TempDir()
	for dir := dataParent; dir != os.TempDir() && dir != "/"; dir = filepath.Dir(dir) {
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	dataDir := filepath.Join(dataParent, "data")
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
		c.DataDir = dataDir
		c.HostConfig.CommandUser = u
	})
	tools := []string{"exec_command", "process_exec", "workspace_read"}
	seq := 0
	exec := func(t *testing.T, command string) contract.Result {
		t.Helper()
		seq++
		name := "user-" + strconv.Itoa(seq)
		a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": "exec_command", "arguments": map[string]any{"command_line": command}}, tools...)
		a["workspace_root"] = project
		res, _ := runAssignment(t, w.queue, a)
		return res
	}
	stdout := func(t *testing.T, command string) string {
		t.Helper()
		res := exec(t, command)
		require.Equal(t, contract.StatusCompleted, res.Status, "%s: %+v", command, res.Error)
		return res.Output.Content
	}
	guard := filepath.Join(project, ".claude", "hooks", "guard.sh")
	guardBefore, err := os.ReadFile(guard)
	require.NoError(t, err)

	assert.Contains(t, stdout(t, "id -u; id -G"), "65534\n65534", "commands run as nobody with no other group")
	for _, attack := range []string{
		"echo 'exit 0' > .claude/hooks/guard.sh",
		"mv .claude .claude.old",
		"rm -f .claude/settings.json",
		"echo '{}' > .claude/settings.local.json",
		"ls " + dataDir,
		"cat " + filepath.Join(dataDir, "audit.db") + " > /dev/null",
		"kill -0 " + strconv.Itoa(os.Getpid()),
	} {
		out := stdout(t, attack+" && echo ATTACK-WORKED || echo refused")
		assert.Contains(t, out, "refused", attack)
		assert.NotContains(t, out, "ATTACK-WORKED", attack)
		assert.NotContains(t, out, "changed protected paths", attack)
	}
	after, err := os.ReadFile(guard)
	require.NoError(t, err)
	assert.Equal(t, string(guardBefore), string(after), "guard.sh unchanged")
	assert.NoFileExists(t, filepath.Join(project, ".claude", "settings.local.json"))

	// The guard still governs, and the agent's own work goes on.
	res := exec(t, "rm -rf ./scratch")
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType)
	assert.Contains(t, stdout(t, "mkdir -p work && echo hello > work/notes.txt && cat work/notes.txt"), "hello")

	a := assignment("user-service", map[string]any{"call_id": "call-user-service", "tool_name": "process_exec", "arguments": map[string]any{"command_line": "id -u > service-uid.txt; sleep 60"}}, tools...)
	a["workspace_root"] = project
	res, _ = runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(project, "service-uid.txt"))
		return err == nil && strings.TrimSpace(string(b)) == "65534"
	}, 10*time.Second, 50*time.Millisecond, "process_exec runs as the command user")
}
