package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/llm/providers"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

// An image an MCP server's tool returns (the official everything
// server's get-tiny-image) reaches the agent's model, over the
// OpenAI-compatible API, as an image after the step's tool message: the
// model sees what Claude Code's would. History holds the context-store
// reference, not the bytes.
func TestAToolsImageReachesTheModel(t *testing.T) {
	project, servers := everythingProject(t, `{"permissions": {"allow": ["mcp__everything"]}}`)

	// The model asks for the image, then describes what it was shown.
	router, asked := chatEndpoint(t, func(step int) map[string]any {
		if step == 0 {
			return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_img", "type": "function", "function": map[string]any{"name": "mcp__everything__get-tiny-image", "arguments": "{}"}}}}
		}
		return map[string]any{"role": "assistant", "content": "It is a tiny picture."}
	})
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
		c.Model = router
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, w.MCP().WaitReady(ctx))

	req := agentTurnRequest(t, "none", map[string]any{
		"agent_context": map[string]any{"profile": "main", "allowed_tool_names": []string{"mcp__everything__get-tiny-image"}},
		"model_context": map[string]any{"likely_model": "vision-model"},
	})
	run := startWorkflow(t, w.queue, workflows.AgentTurnWorkflow, req["logical_work_id"].(string), req)
	var res contract.Result
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "It is a tiny picture.", res.Output.Content)

	requests := asked()
	require.Len(t, requests, 2)
	second := requests[1]
	last := second[len(second)-1]
	require.Equal(t, "user", last["role"], "the image follows the tool message: %v", second)
	require.Equal(t, "tool", second[len(second)-2]["role"])
	parts, _ := last["content"].([]any)
	require.Len(t, parts, 2, "%v", last)
	assert.Contains(t, parts[0].(map[string]any)["text"], "mcp__everything__get-tiny-image")
	url := parts[1].(map[string]any)["image_url"].(map[string]any)["url"].(string)
	require.True(t, strings.HasPrefix(url, "data:image/png;base64,"), "%.60s", url)
	data, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(url, "data:image/png;base64,"))
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(filepath.Dir(servers.Entry("server-everything")), "tools", "get-tiny-image.js"))
	require.NoError(t, err)
	m := regexp.MustCompile(`MCP_TINY_IMAGE\s*=\s*"([A-Za-z0-9+/=]+)"`).FindSubmatch(src)
	require.NotNil(t, m, "the everything server no longer spells its image as before")
	assert.Equal(t, string(m[1]), base64.StdEncoding.EncodeToString(data), "the model is shown the server's image byte for byte")

	for _, e := range history(t, run) {
		raw, err := proto.Marshal(e)
		require.NoError(t, err)
		require.False(t, bytes.Contains(raw, data[:32]) || bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString(data[:48]))),
			"event %d (%s) holds the image's bytes", e.EventId, e.EventType)
	}
}

// A kernel's user message carries an image it put in the workers'
// context store (a user's upload): the model is shown it in that message,
// after its text.
func TestAUsersImageReachesTheModel(t *testing.T) {
	router, asked := chatEndpoint(t, func(int) map[string]any {
		return map[string]any{"role": "assistant", "content": "A receipt for 12 euros."}
	})
	w := startWorker(t, func(c *worker.Config) { c.Model = router })
	receipt := []byte("\xff\xd8\xff\xe0 a JPEG, as far as this test cares")
	store, err := contextstore.NewFS(filepath.Join(w.dataDir, "contexts"))
	require.NoError(t, err)
	ref, err := store.Put(context.Background(), receipt)
	require.NoError(t, err)

	req := agentTurnRequest(t, "none", map[string]any{
		"agent_context": map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator"}},
		"model_context": map[string]any{"likely_model": "vision-model"},
		"context_messages": []map[string]any{{"role": "user", "content": "What is on this receipt?",
			"images": []map[string]any{{"ref": ref, "mime_type": "image/jpeg", "bytes": len(receipt)}}}},
	})
	res := runTurn(t, w.queue, req)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	requests := asked()
	require.Len(t, requests, 1)
	last := requests[0][len(requests[0])-1]
	parts, _ := last["content"].([]any)
	require.Len(t, parts, 2, "%v", last)
	assert.Equal(t, "What is on this receipt?", parts[0].(map[string]any)["text"])
	assert.Equal(t, "data:image/jpeg;base64,"+base64.StdEncoding.EncodeToString(receipt), parts[1].(map[string]any)["image_url"].(map[string]any)["url"])
}

// chatEndpoint is an OpenAI-compatible endpoint on loopback whose answer
// to the step-th request (from 0) is answer(step), and the worker's model
// router with it as FENIX_OPENAI_BASE_URL; asked returns the messages of
// each request so far.
func chatEndpoint(t *testing.T, answer func(step int) map[string]any) (*llm.Router, func() [][]map[string]any) {
	t.Helper()
	var mu sync.Mutex
	var asked [][]map[string]any
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []map[string]any `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		step := len(asked)
		asked = append(asked, req.Messages)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "vision-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": answer(step)}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	t.Cleanup(model.Close)
	router, err := providers.FromEnv(func(k string) string {
		return map[string]string{"FENIX_OPENAI_BASE_URL": model.URL + "/v1", "FENIX_MODEL": "vision-model"}[k]
	})
	require.NoError(t, err)
	return router, func() [][]map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
}
