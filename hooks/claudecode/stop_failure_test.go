package claudecode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
)

// A StopFailure hook, as a user writes one to page someone when the
// model's API fails, hears of a main agent's failed model call with
// Claude Code's fields, its matcher selecting on the error's kind; not of
// a tool's failure, a step limit or a subagent's. What it prints and its
// exit status are ignored, as in Claude Code.
func TestStopFailureHooksHearOfFailedModelCalls(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "page.sh", `cat >> "$PWD/paged.jsonl"; echo >> "$PWD/paged.jsonl"
echo '{"decision":"block","reason":"keep going"}'; exit 2`)
	r := hooks.NewRegistry()
	r.Add(newCommandHook(t, cmdHook{Event: "StopFailure", Matcher: "rate_limit|authentication_failed", Command: script, Dialect: DialectClaude}))
	ctx := context.Background()
	main := hooks.Session{SessionID: "conv", WorkspaceRoot: dir}
	sub := main
	sub.IsSubagent = true
	modelFailure := func(s hooks.Session, typ, code, msg string) hooks.ErrorEvent {
		return hooks.ErrorEvent{Session: s, Stage: hooks.StageCallModel, ErrorType: typ, ErrorCode: code, ErrorMessage: msg}
	}
	for _, c := range []struct {
		name  string
		event hooks.ErrorEvent
		heard bool
	}{
		{"rate limited", modelFailure(main, fenixerr.TypeTransient, fenixerr.CodeRateLimited, "model provider openai answered HTTP 429 Too Many Requests"), true},
		{"bad key", modelFailure(main, fenixerr.TypeModelProvider, fenixerr.CodeAuthenticationFailed, "answered HTTP 401 Unauthorized"), true},
		{"server error, not matched", modelFailure(main, fenixerr.TypeTransient, fenixerr.CodeProviderUnavailable, "answered HTTP 503"), false},
		{"a subagent's", modelFailure(sub, fenixerr.TypeTransient, fenixerr.CodeRateLimited, "429"), false},
		{"a step limit", modelFailure(main, fenixerr.TypeStepLimit, "max_steps_reached", "too many steps"), false},
		{"a tool's failure", hooks.ErrorEvent{Session: main, Stage: "execute_tool", ErrorType: fenixerr.TypeRuntime, ErrorMessage: "boom"}, false},
	} {
		sum := r.RunError(ctx, c.event)
		assert.NoError(t, sum.Err(), c.name)
		assert.Equal(t, c.heard, len(sum.Decisions) == 1, "%s: %+v", c.name, sum.Decisions)
		assert.Nil(t, sum.Halt, c.name)
	}

	raw, err := os.ReadFile(filepath.Join(dir, "paged.jsonl"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 2)
	var first, second map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	assert.Equal(t, "StopFailure", first["hook_event_name"])
	assert.Equal(t, "rate_limit", first["error"])
	assert.Equal(t, "model provider openai answered HTTP 429 Too Many Requests", first["error_details"])
	assert.Equal(t, "API Error: model provider openai answered HTTP 429 Too Many Requests", first["last_assistant_message"])
	assert.Equal(t, "conv", first["session_id"])
	assert.Equal(t, "authentication_failed", second["error"])
}

func TestAPIErrorNamesAreClaudeCodes(t *testing.T) {
	for code, want := range map[string]string{
		fenixerr.CodeRateLimited: "rate_limit", fenixerr.CodeAuthenticationFailed: "authentication_failed",
		fenixerr.CodeInsufficientQuota: "billing_error", fenixerr.CodeInvalidRequest: "invalid_request",
		fenixerr.CodeContextLengthExceeded: "invalid_request", fenixerr.CodeProviderUnavailable: "server_error",
		"model_provider_error": "unknown", "": "unknown",
	} {
		assert.Equal(t, want, apiErrorName(code), code)
	}
}
