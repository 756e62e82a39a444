package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/harness/npm"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	"github.com/fenixrt/fenix/internal/worker"
)

// temporalClient is the official Temporal TypeScript SDK client a kernel
// written for Node uses.
const temporalClient = "@temporalio/client@1.24.0"

// A kernel written in another language than Fenix, with its own Temporal
// SDK (the official TypeScript one, from npm, in testdata/kernel.mjs),
// drives Fenix by the public names alone: it runs a tool call to its
// result, answers a call's permission with the decide_permission update
// after finding it with the pending_permissions query, and cancels a
// running command with the cancel signal once the reports query shows its
// output. What it reads back is Fenix's result, as a Go kernel reads it.
func TestAKernelInTypeScriptDrivesFenix(t *testing.T) {
	dir, err := npm.Install(context.Background(), "kernel", temporalClient)
	if err != nil {
		t.Skipf("the Temporal TypeScript SDK from npm is unavailable (%v); install node and npm, or run .ci/run", err)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "kernel.mjs"))
	require.NoError(t, err)
	// Beside node_modules, so node resolves the SDK.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fenix-kernel.mjs"), script, 0o644))

	w := startWorker(t, func(c *worker.Config) { c.Hooks = []hooks.AgentHook{testtools.PolicyHook{}} })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "fenix-kernel.mjs"), server.HostPort, server.Namespace, w.queue, "ts-kernel-"+newTaskQueue(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	events := map[string]map[string]any{}
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		var e map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "%s", sc.Bytes())
		events[e["event"].(string)] = e
	}
	require.NoError(t, err, "kernel: %v\nstdout:\n%s\nstderr:\n%s", events["fatal"], out, stderr.String())

	result := func(event string) contract.Result {
		t.Helper()
		require.Contains(t, events, event, "%s", out)
		raw, err := json.Marshal(events[event]["result"])
		require.NoError(t, err)
		var r contract.Result
		require.NoError(t, json.Unmarshal(raw, &r))
		return r
	}
	calc := result("calculator")
	require.Equal(t, contract.StatusCompleted, calc.Status, "%+v", calc.Error)
	assert.Equal(t, "The calculator returned 42.", calc.Output.Content)

	pending, _ := events["pending"]["pending"].([]any)
	require.Len(t, pending, 1, "%v", events["pending"])
	assert.Equal(t, "ask-ts-1", pending[0].(map[string]any)["call_id"])
	assert.Equal(t, true, events["decided"]["decided"].(map[string]any)["accepted"], "%v", events["decided"])
	asked := result("asked")
	require.Equal(t, contract.StatusCompleted, asked.Status, "%+v", asked.Error)
	assert.Equal(t, "The calculator returned 256.", asked.Output.Content)
	assert.Equal(t, "ts-kernel", findTraceEntry(asked.Trace, "permission_decision").Get("decider"), "the decision is recorded as the kernel's")

	canceled := result("canceled")
	require.Equal(t, contract.StatusCanceled, canceled.Status, "%+v", canceled)
	assert.Contains(t, canceled.Error.LastErrorSummary, "the user pressed stop")
}
