package faults

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/browser"
)

// TestKilledWorkerLeavesNoChromiumAndItsSessionFailsTyped: a worker
// holding a browser session is SIGKILLed. Its Chromium dies with it (own
// process group, Pdeathsig), and once the worker is back on the same data
// directory, calls on the session fail with a WorkerLostError naming it.
func TestKilledWorkerLeavesNoChromiumAndItsSessionFailsTyped(t *testing.T) {
	if _, err := browser.FindChromium(); err != nil {
		t.Skipf("browser tests need Chromium: %v", err)
	}
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<title>Kept page</title><p>still here</p>")
	}))
	defer site.Close()
	c := server.Client()
	spec := workerSpec{addr: server.HostPort, queue: newTaskQueue(), dataDir: t.TempDir(), workspace: t.TempDir(),
		env: []string{"FENIX_FETCH_ALLOW=127.0.0.0/8"}}
	first := startWorkerProc(t, spec)
	tools := []string{"browser_open", "browser_snapshot"}

	res := awaitAfterStart(t, c, spec.queue, "faults-browser-open", assignment("browser-open", map[string]any{
		"call_id": "call-open", "tool_name": "browser_open", "arguments": map[string]any{"url": site.URL + "/"},
	}, tools...))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	id, _ := res.Output.Data["browser_session_id"].(string)
	require.NotEmpty(t, id)
	profiles := filepath.Join(spec.dataDir, "browser", "profiles") + "/"
	pids := browser.ProcessesUsingProfile(profiles)
	require.NotEmpty(t, pids, "Chromium runs for session %s", id)

	killedAt := time.Now()
	first.kill(t)
	require.Eventually(t, func() bool { return len(browser.ProcessesUsingProfile(profiles)) == 0 }, 10*time.Second, 20*time.Millisecond,
		"Chromium %v dies with its worker", pids)
	t.Logf("Chromium (%d processes) gone %s after the worker's SIGKILL", len(pids), time.Since(killedAt))

	startWorkerProc(t, spec)
	res = awaitAfterStart(t, c, spec.queue, "faults-browser-after", assignment("browser-after", map[string]any{
		"call_id": "call-after", "tool_name": "browser_snapshot", "arguments": map[string]any{"browser_session_id": id},
	}, tools...))
	require.Equal(t, contract.StatusFailed, res.Status)
	require.NotNil(t, res.Error)
	assert.Equal(t, fenixerr.TypeWorkerLost, res.Error.ErrorType, "%+v", res.Error)
	assert.Equal(t, "worker_lost", res.Error.Code)
	assert.Contains(t, res.Error.LastErrorSummary, id, "the error names the lost session")
}
