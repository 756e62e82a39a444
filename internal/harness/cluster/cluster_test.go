package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/testenv"
	"github.com/fenixrt/fenix/workflows"
)

// TestPipelinesCompleteOnTheCluster: a calculator call, an exec_command
// call and a whole AgentTurn (scripted model, workspace_read and calculator
// in parallel) complete on the production server with hosts in their own
// network namespaces.
func TestPipelinesCompleteOnTheCluster(t *testing.T) {
	requireCluster(t)
	ensureHosts(t)
	res := run(t, "pipeline-calc", assignment("pipeline-calc", calculatorCall("call-calc", "6 * 7"), "calculator"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "The calculator returned 42.", res.Output.Content)

	res = run(t, "pipeline-exec", assignment("pipeline-exec", execCall("call-exec", "echo hello from $(ip -4 -o addr show scope global | awk '{print $4}')", 30), "exec_command"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	ranOn := toolRanOn(history(t, "pipeline-exec"))
	require.NotNil(t, ranOn, "exec_command ran on one of the hosts")
	assert.Contains(t, res.Output.Content, "hello from "+ranOn.Link.Addr+"/30", "the command ran inside host %s's network namespace", ranOn.Name)

	for _, h := range []*Host{hostA, hostB} {
		require.NoError(t, os.WriteFile(filepath.Join(h.Workspace, "README.md"), []byte("# Example workspace\n\nA Fenix cluster host.\n"), 0o644))
	}
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "agent_turn.json"))
	require.NoError(t, err)
	var turn map[string]any
	require.NoError(t, json.Unmarshal(raw, &turn))
	turn["turn_id"] = "turn-cluster"
	start(t, workflows.AgentTurnWorkflow, "pipeline-agent", turn)
	res = result(t, "pipeline-agent", 2*time.Minute)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "17 * 23 = 391")
}

// TestTranscriptStoredByOneHostIsReadByTheOther: the context store is
// PostgreSQL, shared by the hosts, which share no directory. A PrepareRound
// whose transcript is too large to inline stores it on the host that runs
// it; with that host's worker stopped, a second PrepareRound that names the
// stored messages by reference runs on the other host and reads them.
func TestTranscriptStoredByOneHostIsReadByTheOther(t *testing.T) {
	requireCluster(t)
	ensureHosts(t)
	var messages []map[string]any
	for i := range 60 {
		messages = append(messages, map[string]any{"role": "user", "content": fmt.Sprintf("message %d: %s", i, strings.Repeat("a long transcript line ", 300))})
	}
	first := map[string]any{
		"logical_work_id": "ctx-share-1", "attempt_no": 1, "conversation_id": "conv-ctx", "turn_id": "turn-1",
		"context_messages": messages,
		"agent_context":    map[string]any{"profile": "main"},
		"model_context":    map[string]any{"likely_model": "gpt-test"},
	}
	start(t, workflows.PrepareRoundWorkflow, "ctx-share-1", first)
	var prepared contract.PreparedRound
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, tc.GetWorkflow(ctx, "ctx-share-1", "").Get(ctx, &prepared))
	require.Equal(t, contract.StatusCompleted, prepared.Status)
	// PrepareTurn stored the assembled transcript (over the 64 KiB inline
	// limit between stages) and names it in its trace entry.
	ref := ""
	for _, e := range prepared.Trace {
		if e.Hook == "prepare_turn" {
			ref, _ = e.Get("context_ref").(string)
		}
	}
	require.NotEmpty(t, ref, "a %d-message transcript is stored by reference; trace: %+v", len(messages), prepared.Trace)
	writer := firstWorkflowTaskOn(history(t, "ctx-share-1"))
	require.NotNil(t, writer)
	reader := otherHost(writer)

	// What the writer stored is in PostgreSQL, not in its data directory.
	store, err := contextstore.OpenPostgres(context.Background(), cl.FenixDSN(), contextstore.PostgresOptions{})
	require.NoError(t, err)
	defer store.Close()
	blob, err := store.Get(context.Background(), ref)
	require.NoError(t, err)
	local, _ := filepath.Glob(filepath.Join(writer.DataDir, "contexts", "*", "*"))
	assert.Empty(t, local, "host %s keeps no context files of its own", writer.Name)

	require.NoError(t, writer.StopWorker(30*time.Second))
	defer func() { require.NoError(t, writer.StartWorker(context.Background())) }()
	second := map[string]any{
		"logical_work_id": "ctx-share-2", "attempt_no": 1, "conversation_id": "conv-ctx", "turn_id": "turn-2",
		"context_ref":   ref,
		"agent_context": map[string]any{"profile": "main"},
		"model_context": map[string]any{"likely_model": "gpt-test"},
	}
	start(t, workflows.PrepareRoundWorkflow, "ctx-share-2", second)
	var again contract.PreparedRound
	require.NoError(t, tc.GetWorkflow(ctx, "ctx-share-2", "").Get(ctx, &again))
	require.Equal(t, contract.StatusCompleted, again.Status, "%+v", again)
	assert.Equal(t, reader, firstWorkflowTaskOn(history(t, "ctx-share-2")), "the second round ran on host %s", reader.Name)
	// The stored transcript is the first round's prepared messages (system
	// prompt + transcript); the second round prepends no new ones.
	assert.GreaterOrEqual(t, again.EstimatedMessageCount, len(messages), "host %s read all of host %s's transcript", reader.Name, writer.Name)
	t.Logf("transcript of %d bytes stored by host %s (%s) and read by host %s; no shared directory", len(blob), writer.Name, ref, reader.Name)
}

// TestCommandRunReadIsRoutedToTheOwningHost: a command run lives on the
// host that ran it; reading it is routed to that host's queue whichever
// host runs the reading workflow.
func TestCommandRunReadIsRoutedToTheOwningHost(t *testing.T) {
	requireCluster(t)
	ensureHosts(t)
	res := run(t, "route-exec", assignment("route-exec", execCall("call-route", "echo kept on its host", 30), "exec_command"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	runID := commandRunID(t, res)
	owner := hostOfResource(runID)
	require.NotNil(t, owner, "command_run_id %q names a host", runID)
	assert.Equal(t, owner, toolRanOn(history(t, "route-exec")), "the run's ID names the host that ran it")

	// Until a read was reviewed by the other host's worker (the shared
	// queue picks either), at most 20 reads: every one runs on the owner.
	reviewedBy := map[string]int{}
	for i := 0; i < 20 && reviewedBy[otherHost(owner).Name] == 0; i++ {
		id := fmt.Sprintf("route-read-%d", i)
		read := run(t, id, assignment(id, map[string]any{
			"call_id": fmt.Sprintf("call-read-%d", i), "tool_name": "command_run_read", "arguments": map[string]any{"command_run_id": runID},
		}, "command_run_read"))
		require.Equal(t, contract.StatusCompleted, read.Status, "%+v", read.Error)
		assert.Contains(t, read.Output.Content, "kept on its host")
		events := history(t, id)
		reviewedBy[hostName(firstWorkflowTaskOn(events))]++
		assert.Equal(t, owner, toolRanOn(events), "read %d ran on host %s", i, hostName(toolRanOn(events)))
	}
	require.Positive(t, reviewedBy[otherHost(owner).Name], "no read was reviewed by host %s in 20 tries: %v", otherHost(owner).Name, reviewedBy)
	t.Logf("command run %s on host %s; reads reviewed by hosts %v, all executed on host %s (queue %s)", runID, owner.Name, reviewedBy, owner.Name, owner.Queue)
}
