package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/harness/logbuf"
	"github.com/fenixrt/fenix/internal/harness/mcpservers"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/tools/mcp"
)

// TestMain doubles as a small Go MCP server (go-sdk) when asked to, for
// the behaviours the npm servers do not offer on demand: a tool list that
// changes, and a tool that reports isError.
func TestMain(m *testing.M) {
	if os.Getenv("FENIX_TEST_MCP_SERVER") == "1" {
		runTestServer()
		return
	}
	os.Exit(m.Run())
}

func runTestServer() {
	server := sdk.NewServer(&sdk.Implementation{Name: "fenix-test", Version: "1"}, nil)
	type empty struct{}
	var addExtra func()
	sdk.AddTool(server, &sdk.Tool{Name: "fail", Description: "always reports an error"}, func(context.Context, *sdk.CallToolRequest, empty) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the disk is full"}}}, nil, nil
	})
	sdk.AddTool(server, &sdk.Tool{Name: "add-extra", Description: "adds the tool extra"}, func(context.Context, *sdk.CallToolRequest, empty) (*sdk.CallToolResult, any, error) {
		addExtra()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "added"}}}, nil, nil
	})
	sdk.AddTool(server, &sdk.Tool{Name: "remove-extra", Description: "removes the tool extra"}, func(context.Context, *sdk.CallToolRequest, empty) (*sdk.CallToolResult, any, error) {
		server.RemoveTools("extra")
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "removed"}}}, nil, nil
	})
	sdk.AddTool(server, &sdk.Tool{Name: "huge", Description: "answers with more text than one message may hold"}, func(context.Context, *sdk.CallToolRequest, empty) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("h", mcp.MaxMessageBytes)}}}, nil, nil
	})
	sdk.AddTool(server, &sdk.Tool{Name: "noisy", Description: "prints a log line on stdout, as careless servers do, then answers"}, func(context.Context, *sdk.CallToolRequest, empty) (*sdk.CallToolResult, any, error) {
		fmt.Fprintln(os.Stdout, "INFO noisy: starting work")
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "noisy ran"}}}, nil, nil
	})
	addExtra = func() {
		sdk.AddTool(server, &sdk.Tool{Name: "extra"}, func(context.Context, *sdk.CallToolRequest, empty) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "extra ran"}}}, nil, nil
		})
	}
	if os.Getenv("FENIX_TEST_MCP_TOOLS") == "lookalike" {
		for _, name := range lookAlikeTools {
			sdk.AddTool(server, &sdk.Tool{Name: name}, func(context.Context, *sdk.CallToolRequest, empty) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " ran"}}}, nil, nil
			})
		}
	}
	if err := server.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

// memStore is an in-memory context store.
type memStore struct {
	mu   sync.Mutex
	data map[string][]byte
}

func (m *memStore) Put(_ context.Context, b []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ref := contextstore.RefFor(b)
	if m.data == nil {
		m.data = map[string][]byte{}
	}
	m.data[ref] = append([]byte(nil), b...)
	return ref, nil
}

func (m *memStore) Get(_ context.Context, ref string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.data[ref]
	if !ok {
		return nil, errors.New("not found")
	}
	return b, nil
}

// startManager loads a .mcp.json written into a temporary project and
// waits for the named servers.
func startManager(t *testing.T, mcpJSON string, env map[string]string, ready ...string) (*mcp.Manager, *tools.Registry, *memStore) {
	t.Helper()
	return startManagerIn(t, t.TempDir(), mcpJSON, env, ready...)
}

// startManagerIn is startManager with the project directory given.
func startManagerIn(t *testing.T, dir, mcpJSON string, env map[string]string, ready ...string) (*mcp.Manager, *tools.Registry, *memStore) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(mcpJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := mcp.Load([]string{dir}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	store := &memStore{}
	m, err := mcp.NewManager(loaded.Servers, mcp.Options{HostID: "test-host", WorkDir: dir, Contexts: store, InlineLimit: 1024})
	if err != nil {
		t.Fatal(err)
	}
	m.Start(30 * time.Second)
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.WaitReady(ctx, ready...); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	return m, reg.WithSources(m), store
}

func everythingConfig(s mcpservers.Servers, dir string) string {
	cfg := map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{s.Entry("server-everything"), "stdio"},
			"env": map[string]string{"GREETING": "${GREETING:-hello}", "FROM_WORKER": "${FENIX_TEST_VISIBLE}"}},
		"memory": map[string]any{"command": "node", "args": []string{s.Entry("server-memory")},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}},
	}}
	raw, _ := json.Marshal(cfg)
	return string(raw)
}

func call(t *testing.T, reg *tools.Registry, name string, args map[string]any, allowed ...string) (tools.Projection, error) {
	t.Helper()
	c := contract.ToolCall{CallID: "call-1", ToolName: name, Arguments: args}
	if _, err := reg.Review(c, contract.AgentContext{Profile: "main", AllowedToolNames: allowed}); err != nil {
		return tools.Projection{}, err
	}
	raw, err := reg.Execute(context.Background(), &tools.Env{CallID: c.CallID, Progress: func(contract.ToolOutputChunk) {}}, c)
	if err != nil {
		return tools.Projection{}, err
	}
	return reg.Project(c, raw)
}

func TestRealServersThroughTheRegistry(t *testing.T) {
	servers := mcpservers.Require(t)
	os.Setenv("FENIX_TEST_SECRET", "must-not-leak")
	defer os.Unsetenv("FENIX_TEST_SECRET")
	m, reg, store := startManager(t, everythingConfig(servers, t.TempDir()), map[string]string{"FENIX_TEST_VISIBLE": "named"})

	t.Run("memory round trip", func(t *testing.T) {
		_, err := call(t, reg, "mcp__memory__create_entities", map[string]any{"entities": []any{
			map[string]any{"name": "fenix", "entityType": "runtime", "observations": []any{"runs on Temporal"}}}}, "mcp__memory")
		if err != nil {
			t.Fatal(err)
		}
		p, err := call(t, reg, "mcp__memory__read_graph", map[string]any{}, "mcp__memory__read_graph")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.Content, "runs on Temporal") {
			t.Fatalf("read_graph = %q, want the observation written before", p.Content)
		}
	})
	t.Run("allow-list by server", func(t *testing.T) {
		_, err := call(t, reg, "mcp__everything__echo", map[string]any{"message": "hi"}, "mcp__memory")
		if !errors.Is(err, fenixerr.ErrToolNotVisible) {
			t.Fatalf("err = %v, want ToolNotVisibleError", err)
		}
	})
	t.Run("schema enforced", func(t *testing.T) {
		_, err := call(t, reg, "mcp__everything__get-sum", map[string]any{"a": "one", "b": 2}, "mcp__everything")
		if !errors.Is(err, fenixerr.ErrValidation) || !strings.Contains(err.Error(), "/a") {
			t.Fatalf("err = %v, want a ValidationError naming /a", err)
		}
	})
	t.Run("structured content", func(t *testing.T) {
		p, err := call(t, reg, "mcp__everything__get-structured-content", map[string]any{"location": "Chicago"}, "mcp__everything")
		if err != nil {
			t.Fatal(err)
		}
		sc, ok := p.Metadata["structured_content"].(map[string]any)
		if !ok || sc["temperature"] == nil {
			t.Fatalf("metadata = %v, want structured_content with temperature", p.Metadata)
		}
		if ann, ok := p.Metadata["annotations"].(*sdk.ToolAnnotations); !ok || !ann.ReadOnlyHint {
			t.Fatalf("annotations = %#v, want the server's readOnlyHint recorded", p.Metadata["annotations"])
		}
		d, _ := reg.Lookup("mcp__everything__get-structured-content")
		if decl := d.Declared; decl == nil || decl.Title != "Get Structured Content Tool" || !strings.Contains(string(decl.OutputSchema), `"temperature"`) || !strings.Contains(string(decl.Annotations), `"readOnlyHint":true`) {
			t.Fatalf("declared = %+v, want the server's title, output schema and hints for the gateway", decl)
		}
	})
	t.Run("image goes to the context store", func(t *testing.T) {
		p, err := call(t, reg, "mcp__everything__get-tiny-image", map[string]any{}, "mcp__everything")
		if err != nil {
			t.Fatal(err)
		}
		refs, _ := p.Metadata["context_refs"].([]string)
		if len(refs) != 1 || !strings.Contains(p.Content, "[image image/png") {
			t.Fatalf("projection = %q %v, want one stored image", p.Content, p.Metadata)
		}
		if data, err := store.Get(context.Background(), refs[0]); err != nil || !strings.HasPrefix(string(data), "\x89PNG") {
			t.Fatalf("stored image: %v (%d bytes)", err, len(data))
		}
		attached, err := tools.AttachmentsOf(p.Metadata)
		if err != nil || len(attached) != 1 || attached[0] != (tools.Attachment{Type: tools.AttachmentImage, MIMEType: "image/png", Ref: refs[0], Bytes: attached[0].Bytes}) || attached[0].Bytes == 0 {
			t.Fatalf("attachments = %+v, %v, want the stored image", attached, err)
		}
	})
	t.Run("a binary resource is an attachment, a short text one is not", func(t *testing.T) {
		p, err := call(t, reg, "mcp__everything__get-resource-reference", map[string]any{"resourceType": "Blob", "resourceId": 2}, "mcp__everything")
		if err != nil {
			t.Fatal(err)
		}
		attached, err := tools.AttachmentsOf(p.Metadata)
		if err != nil || len(attached) != 1 || attached[0].Type != tools.AttachmentResource || attached[0].Text || !strings.HasPrefix(attached[0].URI, "demo://resource/") {
			t.Fatalf("attachments = %+v, %v (%q), want the blob resource", attached, err, p.Content)
		}
		p, err = call(t, reg, "mcp__everything__get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 1}, "mcp__everything")
		if err != nil {
			t.Fatal(err)
		}
		if attached, _ := tools.AttachmentsOf(p.Metadata); len(attached) != 0 || !strings.Contains(p.Content, "Resource 1") {
			t.Fatalf("attachments = %+v (%q), want the text inline and nothing attached", attached, p.Content)
		}
	})
	t.Run("resource templates are listed for the gateway, not the model", func(t *testing.T) {
		p, err := call(t, reg, mcp.ListResourcesTool, map[string]any{"server": "everything"}, mcp.ListResourcesTool)
		if err != nil {
			t.Fatal(err)
		}
		templates, _ := p.Metadata[mcp.MetaResourceTemplates].([]mcp.ListedTemplate)
		if !slices.ContainsFunc(templates, func(t mcp.ListedTemplate) bool {
			return t.URITemplate == "demo://resource/dynamic/text/{resourceId}" && t.Server == "everything"
		}) || strings.Contains(p.Content, "{resourceId}") {
			t.Fatalf("templates = %+v, content %.300q; want the dynamic text template in the metadata only", templates, p.Content)
		}
	})
	t.Run("prompts", func(t *testing.T) {
		p, err := call(t, reg, mcp.ListPromptsTool, map[string]any{"server": "everything"}, mcp.ListPromptsTool)
		if err != nil || !strings.Contains(p.Content, `"name":"args-prompt"`) || !strings.Contains(p.Content, `{"name":"city","description":"Name of the city","required":true}`) {
			t.Fatalf("listing = %.400q, %v; want args-prompt with its required city", p.Content, err)
		}
		p, err = call(t, reg, mcp.GetPromptTool, map[string]any{"server": "everything", "name": "args-prompt", "arguments": map[string]any{"city": "Paris"}}, mcp.GetPromptTool)
		if err != nil || p.Content != "user: What's weather in Paris?" {
			t.Fatalf("prompt = %q, %v", p.Content, err)
		}
		if messages, _ := p.Metadata[mcp.MetaPromptMessages].([]mcp.PromptMessage); len(messages) != 1 || messages[0].Role != "user" || messages[0].Content.Text != "What's weather in Paris?" {
			t.Fatalf("messages = %+v, want the server's one message for the gateway", p.Metadata[mcp.MetaPromptMessages])
		}
		_, err = call(t, reg, mcp.GetPromptTool, map[string]any{"server": "everything", "name": "args-prompt"}, mcp.GetPromptTool)
		if fenixerr.As(err).Code != mcp.CodePromptRefused {
			t.Fatalf("a prompt missing its required argument: %v, want code %s", err, mcp.CodePromptRefused)
		}
	})
	t.Run("completions", func(t *testing.T) {
		p, err := call(t, reg, mcp.CompleteArgumentTool, map[string]any{"server": "everything", "prompt": "completable-prompt", "argument": "name", "value": "", "context": map[string]any{"department": "Support"}}, mcp.CompleteArgumentTool)
		if err != nil || !slices.Equal(p.Metadata[mcp.MetaCompletionValues].([]string), []string{"John", "Kim", "Lee"}) || !strings.Contains(p.Content, "John\nKim\nLee") {
			t.Fatalf("completion = %q %v, %v; want Support's three, the department sent along", p.Content, p.Metadata, err)
		}
		p, err = call(t, reg, mcp.CompleteArgumentTool, map[string]any{"server": "everything", "uri_template": "demo://resource/dynamic/blob/{resourceId}", "argument": "resourceId", "value": "x"}, mcp.CompleteArgumentTool)
		if err != nil || len(p.Metadata[mcp.MetaCompletionValues].([]string)) != 0 || !strings.Contains(p.Content, "suggests no value") {
			t.Fatalf("completion = %q %v, %v; want none for a non-number", p.Content, p.Metadata, err)
		}
		_, err = call(t, reg, mcp.CompleteArgumentTool, map[string]any{"server": "everything", "prompt": "completable-prompt", "uri_template": "demo://x/{y}", "argument": "name", "value": ""}, mcp.CompleteArgumentTool)
		if fenixerr.As(err).Type != fenixerr.TypeValidation || !strings.Contains(err.Error(), "exactly one") {
			t.Fatalf("a prompt and a template at once: %v, want a validation error", err)
		}
	})
	t.Run("subscriptions", func(t *testing.T) {
		watch := func(since string) (tools.Projection, error) {
			return call(t, reg, mcp.WatchResourceTool, map[string]any{"server": "everything", "uri": "demo://resource/static/document/architecture.md", "since": since}, mcp.WatchResourceTool)
		}
		p, err := watch("")
		version, _ := p.Metadata["version"].(string)
		if err != nil || version == "" || p.Metadata["updated"] != false {
			t.Fatalf("subscribing = %q %v, %v", p.Content, p.Metadata, err)
		}
		// The everything server sends its subscribers updates once this
		// tool is called (and every 5 s after).
		if _, err := call(t, reg, "mcp__everything__toggle-subscriber-updates", map[string]any{}, "mcp__everything"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		p, err = watch(version)
		if err != nil || p.Metadata["updated"] != true || p.Metadata["version"] == version || time.Since(start) > time.Minute {
			t.Fatalf("watching = %q %v, %v after %s; want the update", p.Content, p.Metadata, err, time.Since(start))
		}
		// The version routes the next watch back to this worker's host.
		d, _ := reg.Lookup(mcp.WatchResourceTool)
		if host, ok := tools.HostOfResource(version); !ok || host != "test-host" || d.OwnerResource(map[string]any{"since": version}) != version {
			t.Fatalf("version %q (host %q) does not route the next watch to its host", version, host)
		}
		if owner := d.OwnerResource(map[string]any{"since": "another-host/epoch/0"}); !strings.HasPrefix(owner, "mcp_test-host_") {
			t.Fatalf("a version that names no host routes to %q, want this host's resource", owner)
		}
		if p, err = watch("another-host/epoch/0"); err != nil || p.Metadata["updated"] != true {
			t.Fatalf("a version this worker cannot vouch for = %v, %v; want updated", p.Metadata, err)
		}
		if _, err = call(t, reg, "mcp__everything__toggle-subscriber-updates", map[string]any{}, "mcp__everything"); err != nil {
			t.Fatal(err)
		}

		// Updates are off: watches wait, and no more than 64 at once.
		p, err = watch("")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var waiting sync.WaitGroup
		defer func() { cancel(); waiting.Wait() }()
		args := map[string]any{"server": "everything", "uri": "demo://resource/static/document/architecture.md", "since": p.Metadata["version"]}
		ended := make(chan error, 65)
		for i := range 65 {
			waiting.Go(func() {
				c := contract.ToolCall{CallID: fmt.Sprint("watch-", i), ToolName: mcp.WatchResourceTool, Arguments: args}
				_, err := reg.Execute(ctx, &tools.Env{CallID: c.CallID, Progress: func(contract.ToolOutputChunk) {}}, c)
				ended <- err
			})
		}
		select {
		case refused := <-ended:
			if fenixerr.As(refused).Code != mcp.CodeTooManyWatches {
				t.Fatalf("the first of 65 waiting watches to end: %v, want code %s", refused, mcp.CodeTooManyWatches)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("65 watches are waiting; want 64 at most")
		}
		select {
		case err := <-ended:
			t.Fatalf("a second watch ended while 64 wait: %v", err)
		case <-time.After(time.Second):
		}
		cancel()
		waiting.Wait()

		// The server's end ends its subscriptions: a waiting watch answers
		// "updated" at once rather than at its bound.
		watchCtx, stop := context.WithTimeout(context.Background(), 20*time.Second)
		defer stop()
		answered := make(chan tools.Projection, 1)
		go func() {
			c := contract.ToolCall{CallID: "watch-restart", ToolName: mcp.WatchResourceTool, Arguments: args}
			if raw, err := reg.Execute(watchCtx, &tools.Env{CallID: c.CallID, Progress: func(contract.ToolOutputChunk) {}}, c); err == nil {
				p, _ := reg.Project(c, raw)
				answered <- p
			}
			close(answered)
		}()
		time.Sleep(300 * time.Millisecond)
		before := statusOf(m, "everything")
		if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case p, ok := <-answered:
			if !ok || p.Metadata["updated"] != true {
				t.Fatalf("the watch across the server's end = %v, want updated", p.Metadata)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a watch of a server that ended still waits")
		}
		waitFor(t, func() bool {
			st := statusOf(m, "everything")
			return st.Restarts > before.Restarts && st.Connected
		}, "the everything server back for the tests after this one")
	})
	t.Run("resource links", func(t *testing.T) {
		p, err := call(t, reg, "mcp__everything__get-resource-links", map[string]any{"count": 2}, "mcp__everything")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(p.Content, "[resource link") != 2 {
			t.Fatalf("projection = %q, want two resource links", p.Content)
		}
	})
	t.Run("environment is only what the config names", func(t *testing.T) {
		p, err := call(t, reg, "mcp__everything__get-env", map[string]any{}, "mcp__everything")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(p.Content, "must-not-leak") || !strings.Contains(p.Content, `"GREETING": "hello"`) || !strings.Contains(p.Content, `"FROM_WORKER": "named"`) {
			t.Fatalf("server environment = %s", p.Content)
		}
	})
	t.Run("progress and cancellation", func(t *testing.T) {
		d, ok := reg.Lookup("mcp__everything__trigger-long-running-operation")
		if !ok {
			t.Fatal("long-running tool not listed")
		}
		if d.Idempotent || !d.RegistryBacked || d.HeartbeatSeconds == 0 {
			t.Fatalf("descriptor = %+v, want non-idempotent, host-pinned, heartbeating", d.Descriptor)
		}
		if owner := d.OwnerResource(nil); !strings.HasPrefix(owner, "mcp_test-host_") {
			t.Fatalf("owner = %q, want a resource of this host", owner)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		var progress []string
		env := &tools.Env{CallID: "long", Progress: func(c contract.ToolOutputChunk) {
			mu.Lock()
			progress = append(progress, c.Text)
			mu.Unlock()
			cancel()
		}}
		before := statusOf(m, "everything").CancelsSent
		started := time.Now()
		_, err := reg.Execute(ctx, env, contract.ToolCall{CallID: "long", ToolName: "mcp__everything__trigger-long-running-operation",
			Arguments: map[string]any{"duration": 30, "steps": 30}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if time.Since(started) > 10*time.Second {
			t.Fatalf("cancel took %v", time.Since(started))
		}
		mu.Lock()
		defer mu.Unlock()
		if len(progress) == 0 || !strings.HasPrefix(progress[0], "progress 1/30") {
			t.Fatalf("progress = %q", progress)
		}
		waitFor(t, func() bool { return statusOf(m, "everything").CancelsSent == before+1 }, "notifications/cancelled written to the server")
	})
	t.Run("restarted when it dies", func(t *testing.T) {
		st := statusOf(m, "memory")
		if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { s := statusOf(m, "memory"); return s.Connected && s.Restarts == st.Restarts+1 }, "memory server restarted")
		p, err := call(t, reg, "mcp__memory__read_graph", map[string]any{}, "mcp__memory")
		if err != nil || !strings.Contains(p.Content, "runs on Temporal") {
			t.Fatalf("after restart: %q %v, want the graph kept in its file", p.Content, err)
		}
	})
}

func TestFailingServerIsRetriedAndOthersServe(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := `{"mcpServers": {
		"broken": {"command": "sh", "args": ["-c", "echo cannot open the database >&2; exit 3"]},
		"go": {"command": "` + exe + `", "env": {"FENIX_TEST_MCP_SERVER": "1"}}}}`
	m, reg, _ := startManager(t, cfg, nil, "go")
	waitFor(t, func() bool { return statusOf(m, "broken").Attempts >= 2 }, "a second attempt at the broken server")
	st := statusOf(m, "broken")
	if st.Connected || !strings.Contains(st.LastError, "cannot open the database") {
		t.Fatalf("broken status = %+v, want the server's stderr in the error", st)
	}
	_, err = call(t, reg, "mcp__broken__anything", nil, "mcp__broken")
	if !errors.Is(err, fenixerr.ErrToolUnavailable) || !strings.Contains(err.Error(), "cannot open the database") {
		t.Fatalf("err = %v, want ToolUnavailableError with the cause", err)
	}

	_, err = call(t, reg, "mcp__go__fail", map[string]any{}, "mcp__go")
	if fe := fenixerr.As(err); fe.Type != fenixerr.TypeRuntime || fe.Code != "mcp_tool_error" || !strings.Contains(fe.Message, "the disk is full") {
		t.Fatalf("isError: err = %v, want a runtime error carrying the server's text", err)
	}

	// A response over the message limit fails its call, naming the limit;
	// the session (and the server process) goes on.
	t.Run("oversized response", func(t *testing.T) {
		before := statusOf(m, "go")
		_, err := call(t, reg, "mcp__go__huge", map[string]any{}, "mcp__go")
		if err == nil || !strings.Contains(err.Error(), "16 MiB") || !strings.Contains(err.Error(), `server "go"`) {
			t.Fatalf("err = %v, want the call to fail naming the 16 MiB limit and the server", err)
		}
		_, err = call(t, reg, "mcp__go__fail", map[string]any{}, "mcp__go")
		if fe := fenixerr.As(err); fe.Code != "mcp_tool_error" {
			t.Fatalf("after the oversized response: %v, want the server still answering", err)
		}
		if st := statusOf(m, "go"); st.Restarts != before.Restarts || st.PID != before.PID {
			t.Fatalf("status %+v after %+v: the session was restarted", st, before)
		}
	})
	// A line on the server's stdout that is not JSON-RPC (a log line) is
	// dropped and logged; the call and the session go on.
	t.Run("stray stdout line", func(t *testing.T) {
		before := statusOf(m, "go")
		res, err := call(t, reg, "mcp__go__noisy", map[string]any{}, "mcp__go")
		if err != nil || !strings.Contains(res.Content, "noisy ran") {
			t.Fatalf("noisy = %+v, %v; want its answer after the stray line", res, err)
		}
		if st := statusOf(m, "go"); st.Restarts != before.Restarts || st.PID != before.PID {
			t.Fatalf("status %+v after %+v: the session was restarted", st, before)
		}
	})
	t.Run("list_changed", func(t *testing.T) {
		if _, err := call(t, reg, "mcp__go__extra", map[string]any{}, "mcp__go"); !errors.Is(err, fenixerr.ErrUnsupportedTool) {
			t.Fatalf("before: %v, want UnsupportedToolError", err)
		}
		if _, err := call(t, reg, "mcp__go__add-extra", map[string]any{}, "mcp__go"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { _, ok := reg.Lookup("mcp__go__extra"); return ok }, "extra listed after tools/list_changed")
		if p, err := call(t, reg, "mcp__go__extra", map[string]any{}, "mcp__go"); err != nil || p.Content != "extra ran" {
			t.Fatalf("extra: %q %v", p.Content, err)
		}
		extraCall := contract.ToolCall{CallID: "x", ToolName: "mcp__go__extra", Arguments: map[string]any{}}
		raw, err := reg.Execute(context.Background(), &tools.Env{Progress: func(contract.ToolOutputChunk) {}}, extraCall)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := call(t, reg, "mcp__go__remove-extra", map[string]any{}, "mcp__go"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { _, ok := reg.Lookup("mcp__go__extra"); return !ok }, "extra gone after tools/list_changed")
		if _, err := call(t, reg, "mcp__go__extra", map[string]any{}, "mcp__go"); !errors.Is(err, fenixerr.ErrUnsupportedTool) {
			t.Fatalf("after removal: %v, want UnsupportedToolError", err)
		}
		// A call that ran before the removal is still projected.
		if p, err := reg.Project(extraCall, raw); err != nil || p.Content != "extra ran" {
			t.Fatalf("projecting a result of a removed tool: %q %v", p.Content, err)
		}
	})
}

func statusOf(m *mcp.Manager, name string) mcp.ServerStatus {
	for _, s := range m.Status() {
		if s.Name == name {
			return s
		}
	}
	return mcp.ServerStatus{}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// server-everything over Streamable HTTP and over HTTP+SSE (the
// 2024-11-05 transport, which Claude Code's .mcp.json still accepts as
// "type": "sse") on loopback: the url the config names is reachable
// through the outbound guard; progress and cancellation work as over
// stdio.
func TestHTTPServers(t *testing.T) {
	servers := mcpservers.Require(t)
	for _, transport := range []string{mcp.TransportHTTP, mcp.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			url := servers.StartEverythingHTTP(t)
			if transport == mcp.TransportSSE {
				url = servers.StartEverythingSSE(t)
			}
			cfg := `{"mcpServers": {"web": {"type": "` + transport + `", "url": "${EVERYTHING_URL}", "headers": {"X-Fenix-Test": "${TOKEN:-t0ken}"}}}}`
			m, reg, _ := startManager(t, cfg, map[string]string{"EVERYTHING_URL": url}, "web")
			p, err := call(t, reg, "mcp__web__echo", map[string]any{"message": "over " + transport}, "mcp__web")
			if err != nil || p.Content != "Echo: over "+transport {
				t.Fatalf("echo = %q, %v", p.Content, err)
			}
			if st := statusOf(m, "web"); st.Type != transport || !st.Connected {
				t.Fatalf("status = %+v", st)
			}
			before := statusOf(m, "web").CancelsSent
			checkProgressAndCancel(t, reg, transport)
			waitFor(t, func() bool { return statusOf(m, "web").CancelsSent == before+1 }, "notifications/cancelled")
		})
	}
}

// checkProgressAndCancel starts a long operation, waits for its first
// progress notification, cancels it and wants the call to end canceled.
func checkProgressAndCancel(t *testing.T, reg *tools.Registry, transport string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progressed := make(chan struct{}, 1)
	env := &tools.Env{CallID: "long", Progress: func(contract.ToolOutputChunk) {
		select {
		case progressed <- struct{}{}:
		default:
		}
	}}
	done := make(chan error, 1)
	go func() {
		_, err := reg.Execute(ctx, env, contract.ToolCall{CallID: "long", ToolName: "mcp__web__trigger-long-running-operation",
			Arguments: map[string]any{"duration": 60, "steps": 120}})
		done <- err
	}()
	select {
	case <-progressed:
	case <-time.After(20 * time.Second):
		t.Fatalf("no progress notification over %s", transport)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the canceled %s call did not return", transport)
	}
}

// lookAlikeTools are tool names an upstream server may list: only
// write.v2 is one Fenix serves.
var lookAlikeTools = []string{
	"read.file", "read_file", // the same name once '.' becomes '_'
	"Delete", "delete", // differ only in case
	"\uff52ead",              // fullwidth r
	"re\u0430d",              // Cyrillic a
	"has space",              // outside the spec's characters
	strings.Repeat("n", 129), // over the spec's 128
	"write.v2",
}

// Upstream tool names outside the MCP spec's [A-Za-z0-9_.-]{1,128} are
// skipped, and every tool of a set whose names collide once normalized, or
// differ only in case, is skipped: a hook or permission rule written for
// one of them can never apply to another. Each skip is a warning naming
// the server and the tool.
func TestLookAlikeToolNamesAreSkipped(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := `{"mcpServers": {"go": {"command": "` + exe + `", "env": {"FENIX_TEST_MCP_SERVER": "1", "FENIX_TEST_MCP_TOOLS": "lookalike"}}}}`
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := mcp.Load([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	m, err := mcp.NewManager(loaded.Servers, mcp.Options{HostID: "test-host", WorkDir: dir, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m.Start(30 * time.Second)
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.WaitReady(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Definitions() {
		got = append(got, d.Name)
	}
	sort.Strings(got)
	want := []string{"mcp__go__add-extra", "mcp__go__fail", "mcp__go__huge", "mcp__go__noisy", "mcp__go__remove-extra", "mcp__go__write_v2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("tools = %q, want %q", got, want)
	}
	warned := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct {
			Level  string `json:"level"`
			Msg    string `json:"msg"`
			Server string `json:"mcp_server"`
			Tool   string `json:"tool"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Level == "WARN" && rec.Server == "go" && strings.Contains(rec.Msg, fmt.Sprintf("%q", rec.Tool)) {
			warned[rec.Tool] = true
		}
	}
	for _, name := range lookAlikeTools[:len(lookAlikeTools)-1] {
		if !warned[name] {
			t.Errorf("no warning names server go and tool %q; log:\n%s", name, logs.String())
		}
	}
	if res, err := m.Call(context.Background(), "go", "write_v2", map[string]any{}); err != nil || res.Text() != "write.v2 ran" {
		t.Fatalf("Call by the served name: %q %v, want the server's write.v2", res.Text(), err)
	}
	if _, err := m.Call(context.Background(), "go", "read.file", map[string]any{}); !errors.Is(err, fenixerr.ErrUnsupportedTool) {
		t.Fatalf("Call of a skipped tool: %v, want UnsupportedToolError", err)
	}
	reg, err := tools.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	reg = reg.WithSources(m)
	if _, err := call(t, reg, "mcp__go__read_file", map[string]any{}, "mcp__go"); !errors.Is(err, fenixerr.ErrUnsupportedTool) {
		t.Fatalf("mcp__go__read_file: %v, want UnsupportedToolError", err)
	}
	if p, err := call(t, reg, "mcp__go__write_v2", map[string]any{}, "mcp__go"); err != nil || p.Content != "write.v2 ran" {
		t.Fatalf("write.v2: %q %v", p.Content, err)
	}
}

// syncBuffer is a log sink safe for the manager's goroutines.
type syncBuffer = logbuf.Buffer
