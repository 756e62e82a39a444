package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// transcript builds about size bytes of conversation.
func transcript(size int) []contract.Message {
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 23) // ~1 KB
	var msgs []contract.Message
	total := 0
	for i := 0; total < size; i++ {
		role := contract.RoleUser
		if i%2 == 1 {
			role = contract.RoleAssistant
		}
		content := fmt.Sprintf("message %d: %s", i, line)
		msgs = append(msgs, contract.Message{Role: role, Content: content})
		total += len(content)
	}
	return msgs
}

func historyBytes(t *testing.T, run client.WorkflowRun) (int, int) {
	events := history(t, run)
	size := 0
	for _, e := range events {
		b, err := e.Marshal()
		require.NoError(t, err)
		size += len(b)
	}
	return size, len(events)
}

func prepareRoundInput(msgs []contract.Message, threshold int) map[string]any {
	return map[string]any{
		"logical_work_id": "big", "attempt_no": 1, "conversation_id": "conv-big", "turn_id": "turn-big",
		"context_messages": msgs,
		"agent_context":    map[string]any{"profile": "main", "allowed_tool_names": []string{}},
		"model_context":    map[string]any{"likely_model": "gpt-test"},
		"budget_hints":     map[string]any{"advisory_compaction_threshold_tokens": threshold},
	}
}

func TestLargeTranscriptIsRecordedOnceInHistory(t *testing.T) {
	w := startWorker(t)

	// 1 MB inline: in history once (the start event); the stages pass a
	// context-store reference.
	oneMB := transcript(1 << 20)
	input := prepareRoundInput(oneMB, 1000)
	raw, _ := json.Marshal(input)
	run := startWorkflow(t, w.queue, workflows.PrepareRoundWorkflow, "it-1mb", input)
	var res contract.PreparedRound
	require.NoError(t, run.Get(context.Background(), &res))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.True(t, res.Compacted)
	// [operator state prompt, compaction placeholder, last two messages]
	assert.Len(t, res.Messages, 4)
	hb, events := historyBytes(t, run)
	ratio1 := float64(hb) / float64(len(raw))
	t.Logf("1 MB inline transcript: input %d bytes, history %d bytes in %d events, ratio %.3f", len(raw), hb, events, ratio1)
	assert.Less(t, ratio1, 1.1, "the transcript must not be copied into stage inputs")

	// 5 MB: over Temporal's 2 MB payload limit, so it goes through the
	// context store by reference; history holds only the reference.
	fiveMB := transcript(5 << 20)
	set, err := contextstore.Put(context.Background(), w.Activities.Contexts, fiveMB)
	require.NoError(t, err)
	input = prepareRoundInput(nil, 1000)
	delete(input, "context_messages")
	input["context_ref"] = set.Ref
	run = startWorkflow(t, w.queue, workflows.PrepareRoundWorkflow, "it-5mb", input)
	res = contract.PreparedRound{}
	require.NoError(t, run.Get(context.Background(), &res))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.True(t, res.Compacted)
	hb, events = historyBytes(t, run)
	ratio5 := float64(hb) / float64(set.Bytes)
	t.Logf("5 MB transcript by context_ref: transcript %d bytes, history %d bytes in %d events, ratio %.4f", set.Bytes, hb, events, ratio5)
	assert.Less(t, hb, 64<<10)

	// The same 5 MB without compaction: too large to return inline, so the
	// result carries messages_ref instead of failing.
	input["budget_hints"] = map[string]any{}
	run = startWorkflow(t, w.queue, workflows.PrepareRoundWorkflow, "it-5mb-ref", input)
	res = contract.PreparedRound{}
	require.NoError(t, run.Get(context.Background(), &res))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Empty(t, res.Messages)
	assert.NotEmpty(t, res.MessagesRef)
	assert.Equal(t, len(fiveMB)+1, res.EstimatedMessageCount, "the transcript plus the system prompt")
}

func TestOversizedInlineTranscriptIsRejectedAtStart(t *testing.T) {
	w := startWorker(t)
	raw, _ := json.Marshal(prepareRoundInput(transcript(3<<20), 0))
	_, err := server.Client().ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{TaskQueue: w.queue},
		workflows.PrepareRoundWorkflow, json.RawMessage(raw))
	require.Error(t, err, "a 3 MB input exceeds the server's 2 MB payload limit")
	t.Logf("server's answer to a 3 MB inline transcript: %v", err)
}

func TestStarterOffloadsOversizedTranscript(t *testing.T) {
	w := startWorker(t)
	input := prepareRoundInput(transcript(3<<20), 1000)
	path := filepath.Join(t.TempDir(), "big.json")
	raw, _ := json.Marshal(input)
	require.NoError(t, os.WriteFile(path, raw, 0o644))

	out, code := runBinary(t, "starter", []string{"FENIX_TASK_QUEUE=" + w.queue}, "prepare", "-id", "it-starter-big-nodir", path)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "over Temporal's 2 MB payload limit: set FENIX_DATA_DIR")

	out, code = runBinary(t, "starter", []string{"FENIX_TASK_QUEUE=" + w.queue, "FENIX_DATA_DIR=" + w.dataDir}, "prepare", "-id", "it-starter-big", path)
	assert.Equal(t, 0, code, out)
	assert.True(t, containsAll(out, "stored in the context store as ctx-sha256-", "Status: completed", "compacted: true"), out)
}

// A FIFO where the operator snapshot expects a directory (the main
// profile's memory directory; made by any command the agent runs) leaves
// the memory entries out of Operator State, with why, instead of hanging
// the snapshot, and every round after it, on an open that waits for a
// writer that never comes.
func TestOperatorSnapshotOfAFIFOMemoryDirectoryEnds(t *testing.T) {
	w := startWorker(t)
	require.NoError(t, os.MkdirAll(filepath.Join(w.workspace, ".fenix", "memory"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(w.workspace, ".fenix", "memory", "main"), 0o644))

	for i := range 2 {
		run := startWorkflow(t, w.queue, workflows.PrepareRoundWorkflow, fmt.Sprintf("it-fifo-memory-%d", i), prepareRoundInput(transcript(1<<10), 0))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var res contract.PreparedRound
		err := run.Get(ctx, &res)
		cancel()
		require.NoError(t, err, "round %d did not end", i)
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		require.NotEmpty(t, res.Messages)
		system := res.Messages[0].Content
		assert.True(t, containsAll(system, "Operator State:", `"memory_entries": "path \".fenix/memory/main\" is not a directory`), system)
	}
}

// A kernel in another language sends a transcript over Temporal's 2 MB
// limit by context_ref and reads a prepared round over 1 MiB back by
// messages_ref, with the store as the README's recipe has it and no Go:
// the transcript's JSON bytes in <store>/<2 hex>/<64 hex>.json, named
// ctx-sha256-<sha256 of those bytes>.
func TestAKernelWithoutGoUsesTheContextStoreByItsRecipe(t *testing.T) {
	w := startWorker(t)
	var messages []map[string]any
	for i := range 3000 {
		messages = append(messages, map[string]any{"role": "user", "content": fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum dolor ", 55))})
	}
	messages = append(messages, map[string]any{"role": "user", "content": "the last question"})
	data, err := json.Marshal(messages)
	require.NoError(t, err)
	require.Greater(t, len(data), 2<<20)
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	dir := filepath.Join(w.dataDir, "contexts", hexSum[:2])
	require.NoError(t, os.MkdirAll(dir, 0o750))
	tmp := filepath.Join(dir, ".kernel-upload")
	require.NoError(t, os.WriteFile(tmp, data, 0o640))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, hexSum+".json")))

	a := map[string]any{"logical_work_id": "kernel-ref-" + w.queue, "attempt_no": 1, "conversation_id": "conv-kernel-ref", "turn_id": "turn-1",
		"context_ref": "ctx-sha256-" + hexSum, "model_context": map[string]any{"likely_model": "gpt-test"}}
	run := startWorkflow(t, w.queue, workflows.PrepareRoundWorkflow, "it-kernel-ref-"+w.queue, a)
	var res map[string]any
	require.NoError(t, run.Get(context.Background(), &res))
	require.Equal(t, "completed", res["status"], "%v", res["error"])
	ref, _ := res["messages_ref"].(string)
	require.True(t, strings.HasPrefix(ref, "ctx-sha256-"), "a round over 1 MiB comes back by reference: %v", res["messages_ref"])
	back, err := os.ReadFile(filepath.Join(w.dataDir, "contexts", ref[len("ctx-sha256-"):][:2], ref[len("ctx-sha256-"):]+".json"))
	require.NoError(t, err)
	var round []map[string]any
	require.NoError(t, json.Unmarshal(back, &round))
	assert.Equal(t, "system", round[0]["role"], "Fenix's prompt first")
	assert.Equal(t, "the last question", round[len(round)-1]["content"])
}
