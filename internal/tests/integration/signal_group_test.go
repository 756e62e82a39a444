package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/contract"
)

// An agent used to Claude Code starts a dev server in one call and, in a
// later one, reloads or stops it the way it always does: `kill -HUP
// $(cat app.pid)`. With signals scoped to each command that was refused
// ("Operation not permitted"). A conversation's commands and services now
// share a domain in their workspace, so its own service is reached, while
// another conversation's commands still cannot touch it — nor the
// project's guard, which keeps blocking.
func TestAConversationReachesItsOwnService(t *testing.T) {
	if confine.ABIVersion() < 6 {
		t.Skip("the kernel's Landlock does not scope signals (ABI 6)")
	}
	project := policyGuardProject(t)
	w := startWorker(t, inProject(project))
	dev := conversationRunner(w, project, "signal-dev", "conv-dev")
	other := conversationRunner(w, project, "signal-other", "conv-other")

	// The service counts the reloads it gets and ends on TERM.
	res := dev(t, "process_exec", `echo $$ > app.pid; trap 'echo reload >> reloads.log' HUP; trap 'echo stopped > stopped.log; exit 0' TERM; while :; do sleep 0.1; done`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(project, "app.pid"))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the service runs")

	res = other(t, "exec_command", `kill -HUP $(cat app.pid) 2>&1; echo "rc=$?"`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "Operation not permitted", "another conversation cannot signal it")

	res = dev(t, "exec_command", `kill -HUP $(cat app.pid) && echo reloaded`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "reloaded")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(project, "reloads.log"))
		return strings.Count(string(b), "reload") == 1
	}, 10*time.Second, 50*time.Millisecond, "the service got exactly its own conversation's reload")

	// The guard is still out of the conversation's reach.
	res = dev(t, "exec_command", `pkill -9 -f 'policy-gua''rd' 2>&1; rm -rf ./scratch`)
	require.Equal(t, contract.StatusFailed, res.Status, "rm -rf ran: %+v", res.Output)
	assert.Contains(t, res.Error.LastErrorSummary, "rm -rf is not allowed")

	res = dev(t, "exec_command", `kill $(cat app.pid) && echo stop-sent`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "stop-sent")
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(project, "stopped.log"))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the service stopped on its own conversation's TERM")
}
