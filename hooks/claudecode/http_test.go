package claudecode

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/netguard"
)

// policyServer is a fake central policy service recording what it got.
type policyServer struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   []map[string]any
	headers  []http.Header
	response func(w http.ResponseWriter, body map[string]any)
}

func newPolicyServer(t *testing.T, response func(w http.ResponseWriter, body map[string]any)) *policyServer {
	t.Helper()
	p := &policyServer{response: response}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		p.mu.Lock()
		p.bodies = append(p.bodies, body)
		p.headers = append(p.headers, r.Header.Clone())
		p.mu.Unlock()
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want a JSON POST", http.StatusBadRequest)
			return
		}
		p.response(w, body)
	}))
	t.Cleanup(p.Close)
	return p
}

func loopbackPolicy() HTTPPolicy {
	return HTTPPolicy{Net: netguard.Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, Setting: "FENIX_HOOKS_HTTP_ALLOW"}}
}

func httpHook(t *testing.T, url string, policy HTTPPolicy, opts ...func(*HTTPHookConfig)) *ExternalHook {
	t.Helper()
	cfg := HTTPHookConfig{URL: url, Policy: policy, ExternalHookConfig: ExternalHookConfig{Event: "PreToolUse", Dialect: DialectClaude, Timeout: 5 * time.Second}}
	for _, o := range opts {
		o(&cfg)
	}
	h, err := NewHTTPHook(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func httpFailClosed(c *HTTPHookConfig) { c.FailClosed = true }

func jsonReply(v string) func(http.ResponseWriter, map[string]any) {
	return func(w http.ResponseWriter, _ map[string]any) { _, _ = io.WriteString(w, v) }
}

func TestHTTPHookSameRequestAndResponseAsCommandHooks(t *testing.T) {
	srv := newPolicyServer(t, func(w http.ResponseWriter, body map[string]any) {
		cmd, _ := body["tool_input"].(map[string]any)["command"].(string)
		if strings.Contains(cmd, "rm -rf") {
			_, _ = io.WriteString(w, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"central policy: no rm -rf"}}`)
			return
		}
		w.WriteHeader(http.StatusOK) // empty body: no decision
	})
	h := httpHook(t, srv.URL+"/v1/hooks", loopbackPolicy())
	r := registryOf(h)
	ws := t.TempDir()
	ev := hooks.PreToolUseEvent{Session: hooks.Session{SessionID: "s1", WorkspaceRoot: ws}, ToolName: "exec_command", CallID: "c1", ToolInput: map[string]any{"command_line": "rm -rf /"}}
	res := r.RunPreToolUse(context.Background(), ev)
	if !res.Blocked() || res.Action.Reason != "central policy: no rm -rf" {
		t.Fatalf("%+v, want the policy service's deny", res)
	}
	ev.ToolInput = map[string]any{"command_line": "ls"}
	if res = r.RunPreToolUse(context.Background(), ev); res.Blocked() || res.Decisions[0].Error != "" {
		t.Fatalf("%+v, want an empty 2xx to allow", res)
	}
	body := srv.bodies[0]
	for k, want := range map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "c1", "session_id": "s1", "cwd": ws, "permission_mode": "default"} {
		if body[k] != want {
			t.Errorf("request %s = %v, want %v", k, body[k], want)
		}
	}
	if h.Type() != "http" {
		t.Errorf("type = %s", h.Type())
	}
}

func TestHTTPHookFailuresAreNonBlockingUnlessFailClosed(t *testing.T) {
	tests := []struct {
		name  string
		reply func(http.ResponseWriter, map[string]any)
		want  string
	}{
		{"non-2xx", func(w http.ResponseWriter, _ map[string]any) {
			http.Error(w, "policy db down", http.StatusServiceUnavailable)
		}, "HTTP status 503"},
		{"plain-text body", jsonReply("deny please"), "not a JSON object"},
		{"invalid JSON", jsonReply(`{"hookSpecificOutput":{"permissionDecision":"perhaps"}}`), "fails validation"},
		{"timeout", func(http.ResponseWriter, map[string]any) { time.Sleep(time.Second) }, "timed out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newPolicyServer(t, tc.reply)
			short := func(c *HTTPHookConfig) { c.Timeout = 300 * time.Millisecond }
			ev := hooks.PreToolUseEvent{Session: hooks.Session{WorkspaceRoot: t.TempDir()}, ToolName: "exec_command", ToolInput: map[string]any{"command_line": "ls"}}
			open := registryOf(httpHook(t, srv.URL, loopbackPolicy(), short)).RunPreToolUse(context.Background(), ev)
			if open.Blocked() || !strings.Contains(open.Decisions[0].Error, tc.want) {
				t.Errorf("fail-open: %+v, want a non-blocking error mentioning %q", open, tc.want)
			}
			closed := registryOf(httpHook(t, srv.URL, loopbackPolicy(), short, httpFailClosed)).RunPreToolUse(context.Background(), ev)
			if !closed.Blocked() || !strings.Contains(closed.Action.Reason, tc.want) {
				t.Errorf("fail-closed: %+v, want a block mentioning %q", closed, tc.want)
			}
		})
	}
}

// http hooks follow web_fetch's outbound rule: loopback and private
// addresses only when allowed, no redirects, and the settings file's
// allowedHttpHookUrls.
func TestHTTPHookOutboundRule(t *testing.T) {
	srv := newPolicyServer(t, jsonReply(`{}`))
	ev := hooks.PreToolUseEvent{Session: hooks.Session{WorkspaceRoot: t.TempDir()}, ToolName: "calculator"}
	res := registryOf(httpHook(t, srv.URL, HTTPPolicy{Net: netguard.Policy{Setting: "FENIX_HOOKS_HTTP_ALLOW"}}, httpFailClosed)).RunPreToolUse(context.Background(), ev)
	if !res.Blocked() || !strings.Contains(res.Action.Reason, "loopback") || !strings.Contains(res.Action.Reason, "FENIX_HOOKS_HTTP_ALLOW") {
		t.Errorf("loopback without an allowance: %+v", res)
	}
	if len(srv.bodies) != 0 {
		t.Error("the request reached a refused destination")
	}

	redirect := newPolicyServer(t, func(w http.ResponseWriter, _ map[string]any) {
		w.Header().Set("Location", srv.URL)
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	res = registryOf(httpHook(t, redirect.URL, loopbackPolicy())).RunPreToolUse(context.Background(), ev)
	if !strings.Contains(res.Decisions[0].Error, "redirects are not followed") || len(srv.bodies) != 0 {
		t.Errorf("redirect: %+v", res)
	}

	path := writeSettings(t, `{"fenixDialect": "claude", "allowedHttpHookUrls": ["https://policy.example.com/*"],
	  "hooks": {"PreToolUse": [{"hooks": [{"type": "http", "url": "`+srv.URL+`/hook"}]}]}}`)
	src, err := LoadSource(path, LoadOptions{HTTPPolicy: loopbackPolicy()})
	if err != nil || len(src.Hooks) != 0 || !strings.Contains(strings.Join(src.Warnings, "\n"), "allowedHttpHookUrls") {
		t.Errorf("a URL outside allowedHttpHookUrls: want the hook skipped with a warning, got %v, %d hooks, warnings %q", err, len(src.Hooks), src.Warnings)
	}
	if _, err := NewHTTPHook(HTTPHookConfig{URL: "file:///etc/passwd", ExternalHookConfig: ExternalHookConfig{Event: "PreToolUse"}}); err == nil {
		t.Error("a file: URL was accepted")
	}
}

func TestHTTPHookHeadersInterpolateOnlyAllowedVariables(t *testing.T) {
	t.Setenv("POLICY_TOKEN", "s3cret")
	t.Setenv("OTHER_SECRET", "leak")
	srv := newPolicyServer(t, jsonReply(`{}`))
	path := writeSettings(t, `{"fenixDialect": "claude", "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "http", "url": "`+srv.URL+`",
	  "headers": {"Authorization": "Bearer $POLICY_TOKEN", "X-Other": "${OTHER_SECRET}x"}, "allowedEnvVars": ["POLICY_TOKEN"], "timeout": 5}]}]}}`)
	src, err := LoadSource(path, LoadOptions{HTTPPolicy: loopbackPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	res := registryOf(src.Hooks...).RunUserPromptSubmit(context.Background(), hooks.UserPromptSubmitEvent{Session: hooks.Session{WorkspaceRoot: t.TempDir()}, Prompt: "hi"})
	if res.Blocked || len(srv.headers) != 1 {
		t.Fatalf("%+v", res)
	}
	if got := srv.headers[0].Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization = %q", got)
	}
	if got := srv.headers[0].Get("X-Other"); got != "x" {
		t.Errorf("X-Other = %q, want the unlisted variable left empty", got)
	}
	if srv.bodies[0]["prompt"] != "hi" {
		t.Errorf("body = %v", srv.bodies[0])
	}
}

func TestHTTPHookOnTurnEvents(t *testing.T) {
	srv := newPolicyServer(t, func(w http.ResponseWriter, body map[string]any) {
		if body["stop_hook_active"] == true {
			return
		}
		_, _ = io.WriteString(w, `{"decision":"block","reason":"summarize the changes first"}`)
	})
	h := httpHook(t, srv.URL, loopbackPolicy(), func(c *HTTPHookConfig) { c.Event = "Stop" })
	r := registryOf(h)
	s := hooks.Session{WorkspaceRoot: t.TempDir()}
	if res := r.RunStop(context.Background(), hooks.StopEvent{Session: s, LastAssistantMessage: "done"}); !res.Continue || res.Reason != "summarize the changes first" {
		t.Errorf("first stop: %+v", res)
	}
	if res := r.RunStop(context.Background(), hooks.StopEvent{Session: s, StopHookActive: true}); res.Continue {
		t.Errorf("stop_hook_active: %+v", res)
	}
	if srv.bodies[0]["last_assistant_message"] != "done" || srv.bodies[0]["hook_event_name"] != "Stop" {
		t.Errorf("body = %v", srv.bodies[0])
	}
}

// allowedHttpHookUrls match the URL the hook reaches, not its spelling:
// dot segments (plain or percent-encoded) cannot climb out of an allowed
// prefix, and a URL outside the list skips the hook with a warning (a
// fail-closed one is an error: skipping it would let everything through).
func TestHTTPHookAllowedURLsMatchTheNormalizedURL(t *testing.T) {
	allowed := HTTPPolicy{AllowedURLs: []string{"https://policy.example.com/allowed/*"}}
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"https://policy.example.com/allowed/check", true},
		{"https://POLICY.example.com:443/allowed/./check", true},
		{"https://policy.example.com/allowed/../deny", false},
		{"https://policy.example.com/allowed/%2e%2e/deny", false},
		{"https://policy.example.com/allowed/x/../../deny", false},
		{"https://policy.example.com/allowed/../allowed/ok", true},
	} {
		_, err := newHTTPTransport(tc.url, nil, nil, allowed)
		if got := err == nil; got != tc.want {
			t.Errorf("%s: allowed = %v (%v), want %v", tc.url, got, err, tc.want)
		}
	}
	tr, err := newHTTPTransport("https://policy.example.com/allowed/x/../check#frag", nil, nil, allowed)
	if err != nil || tr.url != "https://policy.example.com/allowed/check" {
		t.Errorf("the hook POSTs to %q (%v), want the normalized URL", tr.url, err)
	}

	settings := func(onFailure string) string {
		return writeSettings(t, `{"fenixDialect": "claude", "allowedHttpHookUrls": ["https://policy.example.com/allowed/*"],
	  "hooks": {"PreToolUse": [{"hooks": [{"type": "http", "url": "https://policy.example.com/allowed/../deny"`+onFailure+`}]}]}}`)
	}
	src, err := LoadSource(settings(""), LoadOptions{})
	if err != nil || len(src.Hooks) != 0 || !strings.Contains(strings.Join(src.Warnings, "\n"), `normalized "https://policy.example.com/deny"`) {
		t.Errorf("want the hook skipped with a warning naming the normalized URL; got %v, %d hooks, %q", err, len(src.Hooks), src.Warnings)
	}
	if _, err := LoadSource(settings(`, "onFailure": "block"`), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "fails closed") {
		t.Errorf("a fail-closed hook outside the list: %v, want an error", err)
	}
}
