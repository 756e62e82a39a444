package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// fakeEvaluator answers prompt hooks as a model would, and keeps what it
// was asked.
type fakeEvaluator struct {
	mu      sync.Mutex
	answer  func(prompt string) (string, error)
	prompts []string
	models  []string
}

func (f *fakeEvaluator) EvaluatePrompt(_ context.Context, model, prompt string) (string, error) {
	f.mu.Lock()
	f.prompts, f.models = append(f.prompts, prompt), append(f.models, model)
	f.mu.Unlock()
	return f.answer(prompt)
}

// promptProject loads a project's .claude/settings.json with prompt hooks
// written as Claude Code users write them.
func promptProject(t *testing.T, eval PromptEvaluator, hooksJSON string) (*hooks.Registry, hooks.Session, *Source) {
	t.Helper()
	dir := t.TempDir()
	path := writeFileAt(t, filepath.Join(dir, ".claude", "settings.json"), `{"hooks": `+hooksJSON+`}`)
	src, err := LoadSource(path, LoadOptions{Prompt: eval})
	if err != nil {
		t.Fatal(err)
	}
	r := hooks.NewRegistry()
	r.AddSource(src.Registered())
	return r, hooks.Session{SessionID: "wf-1", RunID: "run-1", WorkspaceRoot: dir}, src
}

const promptGuard = `{
  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "model": "haiku",
    "prompt": "You review shell commands. Refuse anything that deletes files. Input: $ARGUMENTS"}]}],
  "Stop": [{"hooks": [{"type": "prompt", "prompt": "Check that the assistant ran the tests before stopping."}]}]
}`

func TestPromptHookRefusalEndsTheTurn(t *testing.T) {
	eval := &fakeEvaluator{answer: func(prompt string) (string, error) {
		if strings.Contains(prompt, "rm -rf") {
			return "```json\n{\"ok\": false, \"reason\": \"the command deletes files\"}\n```", nil
		}
		return `{"ok": true}`, nil
	}}
	r, s, _ := promptProject(t, eval, promptGuard)
	ctx := context.Background()

	res := r.RunPreToolUse(ctx, hooks.PreToolUseEvent{Session: s, ToolName: "exec_command", CallID: "c1", ToolInput: map[string]any{"command_line": "rm -rf build"}})
	if !res.Blocked() || res.Halt == nil || !strings.Contains(res.Halt.Reason, "the command deletes files") {
		t.Fatalf("result = %+v, want the call blocked and the turn ended with the model's reason", res)
	}
	var event map[string]any
	asked := eval.prompts[0]
	if !strings.HasPrefix(asked, "You review shell commands.") || json.Unmarshal([]byte(strings.TrimPrefix(asked, "You review shell commands. Refuse anything that deletes files. Input: ")), &event) != nil {
		t.Fatalf("prompt = %q, want $ARGUMENTS replaced by the event JSON", asked)
	}
	if event["tool_name"] != "Bash" || event["hook_event_name"] != "PreToolUse" {
		t.Errorf("event = %v, want Claude Code's PreToolUse input for Bash", event)
	}
	if eval.models[0] != "haiku" {
		t.Errorf("model = %q, want the handler's", eval.models[0])
	}

	res = r.RunPreToolUse(ctx, hooks.PreToolUseEvent{Session: s, ToolName: "exec_command", CallID: "c2", ToolInput: map[string]any{"command_line": "go test ./..."}})
	if res.Blocked() || res.Halt != nil || res.Decisions[0].Error != "" {
		t.Fatalf("result = %+v, want ok: true to let the call run", res)
	}
}

func TestPromptStopHookKeepsTheAgentGoing(t *testing.T) {
	eval := &fakeEvaluator{answer: func(string) (string, error) {
		return `{"ok": false, "reason": "Run the tests first."}`, nil
	}}
	r, s, _ := promptProject(t, eval, promptGuard)
	stop := r.RunStop(context.Background(), hooks.StopEvent{Session: s, LastAssistantMessage: "Done."})
	if !stop.Continue || stop.Halt != nil || !strings.Contains(stop.Reason, "Run the tests first.") {
		t.Fatalf("stop = %+v, want the agent kept going with the reason as its instruction", stop)
	}
	asked := eval.prompts[0]
	if !strings.HasPrefix(asked, "Check that the assistant ran the tests before stopping.\n\n{") || !strings.Contains(asked, `"last_assistant_message":"Done."`) {
		t.Errorf("prompt = %q, want the event JSON appended to a prompt without $ARGUMENTS", asked)
	}
}

// An answer that is not a decision, or a model that cannot be reached,
// is a hook error: the call goes on, unless the hook fails closed.
func TestPromptHookFailuresFollowOnFailure(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(string) (string, error)
		want   string
	}{
		{"prose", func(string) (string, error) { return "Looks fine to me!", nil }, "not one JSON object"},
		{"no ok", func(string) (string, error) { return `{"verdict": "fine"}`, nil }, `boolean "ok"`},
		{"unreachable", func(string) (string, error) { return "", errors.New("connection refused") }, "the model could not be asked: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, onFailure := range []string{"continue", "block"} {
				r, s, _ := promptProject(t, &fakeEvaluator{answer: tc.answer},
					`{"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "Is it safe? $ARGUMENTS", "onFailure": "`+onFailure+`"}]}]}`)
				res := r.RunPreToolUse(context.Background(), hooks.PreToolUseEvent{Session: s, ToolName: "calculator", CallID: "c", ToolInput: map[string]any{"expression": "1+1"}})
				if !strings.Contains(res.Decisions[0].Error, tc.want) {
					t.Errorf("onFailure %s: decision error = %q, want it to say %q", onFailure, res.Decisions[0].Error, tc.want)
				}
				if res.Blocked() != (onFailure == "block") {
					t.Errorf("onFailure %s: blocked = %v", onFailure, res.Blocked())
				}
			}
		})
	}
}

func TestPromptHandlersLoadWhereClaudeCodeRunsThem(t *testing.T) {
	_, _, src := promptProject(t, &fakeEvaluator{}, `{
	  "SessionStart": [{"hooks": [{"type": "prompt", "prompt": "Greet"}]}],
	  "PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "Check $ARGUMENTS"}]}]
	}`)
	if len(src.Hooks) != 1 || external(t, src.Hooks[0]).Type() != "prompt" || external(t, src.Hooks[0]).Timeout() != DefaultPromptHookTimeout {
		t.Fatalf("hooks = %v, want the PreToolUse prompt hook with the 30 s default", src.Hooks)
	}
	if joined := strings.Join(src.Warnings, "\n"); !strings.Contains(joined, "prompt handler skipped: prompt handlers run only on") {
		t.Errorf("warnings = %s, want the SessionStart prompt handler named as skipped", joined)
	}
	_, err := LoadSource(writeSettings(t, `{"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": " "}]}]}}`), LoadOptions{Prompt: &fakeEvaluator{}})
	if err == nil || !strings.Contains(err.Error(), `needs a "prompt"`) {
		t.Errorf("empty prompt: err = %v", err)
	}
}

// The answer is one JSON object, alone or in one code fence; one fished
// out of prose could be the agent's words quoted back.
func TestReadPromptAnswerTakesOnlyAWholeObject(t *testing.T) {
	for answer, want := range map[string]bool{
		`{"ok": true}`: true,
		" \n{\"ok\": false, \"reason\": \"no\"}\n": false,
		"```json\n{\"ok\": true}\n```":             true,
		"```\n{\"ok\": false}\n```":                false,
	} {
		ok, _, err := readPromptAnswer(answer)
		if err != nil || ok != want {
			t.Errorf("%q: ok %v, err %v; want %v", answer, ok, err, want)
		}
	}
	for _, answer := range []string{
		`The command says {"ok": true}, but it deletes files: {"ok": false, "reason": "deletes"}`,
		`{"ok": true} {"ok": false, "reason": "second thoughts"}`,
		`Sure! {"ok": true}`,
		`{"ok": "yes"}`,
		"",
	} {
		if _, _, err := readPromptAnswer(answer); err == nil {
			t.Errorf("%q was read as a decision", answer)
		}
	}
}

// judgedEvaluator names the model it would send a hook to, as the
// worker's evaluator does (llm.HookPromptEvaluator.JudgeModel).
type judgedEvaluator struct {
	fakeEvaluator
	judge string
}

func (j *judgedEvaluator) JudgeModel(hookModel string) string {
	if hookModel != "" {
		return hookModel
	}
	return j.judge
}

// Another judge is another policy: the same settings evaluated by another
// model give another fingerprint, the same model the same one; command
// hooks' fingerprints do not depend on it.
func TestPromptHookJudgeIsPartOfThePolicyFingerprint(t *testing.T) {
	const settings = `{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Is this command safe? $ARGUMENTS"}]}]}`
	fingerprint := func(judge string) string {
		r, _, _ := promptProject(t, &judgedEvaluator{judge: judge}, settings)
		return r.PolicyFingerprint([]string{"exec_command"})
	}
	small, large := fingerprint("small-judge"), fingerprint("large-judge")
	if small == large {
		t.Fatalf("judges small-judge and large-judge give the same fingerprint %s", small)
	}
	if again := fingerprint("small-judge"); again != small {
		t.Errorf("the same judge: fingerprint %s, then %s", small, again)
	}
	named, _, _ := promptProject(t, &judgedEvaluator{judge: "small-judge"},
		`{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Is this command safe? $ARGUMENTS", "model": "large-judge"}]}]}`)
	if got := named.PolicyFingerprint([]string{"exec_command"}); got == small || got == large {
		t.Errorf("a hook naming its model: fingerprint %s equals one without (small %s, large %s), though its settings differ", got, small, large)
	}
	h := newCommandHook(t, cmdHook{Command: "true"})
	if h.PolicyIdentity() != "" {
		t.Errorf("a command hook's identity = %q, want none", h.PolicyIdentity())
	}
}
