package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/hooks"
)

// PromptEvaluator asks a model about a prompt hook's prompt, for "prompt"
// handlers (Claude Code's LLM-evaluated hooks). model is the handler's
// "model" field ("" for the evaluator's default); the answer is the
// model's text, which should be a JSON object {"ok": bool, "reason": ...}.
type PromptEvaluator interface {
	EvaluatePrompt(ctx context.Context, model, prompt string) (answer string, err error)
}

// AgentEvaluator evaluates "agent" handlers: like a prompt handler's
// model, with read-only tools over the session's workspace (root) to
// verify the condition before it answers.
type AgentEvaluator interface {
	EvaluateAgent(ctx context.Context, model, prompt, root string) (answer string, err error)
}

// DefaultAgentHookTimeout is Claude Code's default for agent handlers.
const DefaultAgentHookTimeout = 60 * time.Second

// promptEvents are the events Claude Code runs prompt handlers on; on
// the others only command (and http, mcp_tool) handlers run.
var promptEvents = map[string]bool{
	"PreToolUse": true, "PostToolUse": true, "PostToolUseFailure": true, "PermissionRequest": true,
	"UserPromptSubmit": true, "Stop": true, "SubagentStop": true,
}

// JudgeModeler is implemented by evaluators that can name the model a
// hook whose "model" field is hookModel is sent to: the policy
// fingerprint covers it, since another judge is another policy.
type JudgeModeler interface {
	JudgeModel(hookModel string) string
}

// PolicyIdentity names a prompt or agent hook's judge for the policy
// fingerprint (hooks.PolicyIdentifier); other hooks have none.
func (h *ExternalHook) PolicyIdentity() string {
	t, ok := h.transport.(*promptTransport)
	if !ok {
		return ""
	}
	var evaluator any = t.evaluator
	if t.agent != nil {
		evaluator = t.agent
	}
	model := t.model
	if j, ok := evaluator.(JudgeModeler); ok {
		model = j.JudgeModel(t.model)
	}
	return t.kind() + " hook judged by model " + strconv.Quote(model)
}

// PromptHookConfig configures a prompt hook.
type PromptHookConfig struct {
	ExternalHookConfig
	// Prompt is the handler's prompt; "$ARGUMENTS" in it is replaced by the
	// event's JSON, which is appended when the prompt does not name it.
	Prompt string
	// Model is the handler's "model" field.
	Model     string
	Evaluator PromptEvaluator
	// Agent, when set, makes it an "agent" handler evaluated with tools;
	// Evaluator is then not used.
	Agent AgentEvaluator
}

// NewPromptHook builds a prompt hook. The model's {"ok": false, "reason"}
// is what Claude Code makes of it: on Stop and SubagentStop the reason goes
// back to the agent and its turn goes on; on the other events the turn
// ends ("continue": false) with the reason. An answer that is not such an
// object, like a model that cannot be reached, is a hook error:
// non-blocking unless the hook fails closed.
func NewPromptHook(cfg PromptHookConfig) (*ExternalHook, error) {
	if strings.TrimSpace(cfg.Prompt) == "" {
		return nil, fmt.Errorf("prompt hook for %s needs a \"prompt\"", cfg.Event)
	}
	if !promptEvents[cfg.Event] {
		return nil, fmt.Errorf("prompt hook for %s: prompt handlers run only on %s", cfg.Event, strings.Join(sortedKeys(promptEvents), ", "))
	}
	if cfg.Evaluator == nil && cfg.Agent == nil {
		return nil, fmt.Errorf("prompt hook for %s: this worker has no model to evaluate it (set FENIX_MODEL and its provider)", cfg.Event)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultPromptHookTimeout
		if cfg.Agent != nil {
			cfg.Timeout = DefaultAgentHookTimeout
		}
	}
	return newExternalHook(cfg.ExternalHookConfig, &promptTransport{prompt: cfg.Prompt, model: cfg.Model, event: cfg.Event, evaluator: cfg.Evaluator, agent: cfg.Agent})
}

type promptTransport struct {
	prompt, model, event string
	evaluator            PromptEvaluator
	agent                AgentEvaluator
}

func (t *promptTransport) kind() string {
	if t.agent != nil {
		return "agent"
	}
	return "prompt"
}

// describe is the prompt's first line, cut: the prompt can be long.
func (t *promptTransport) describe() string {
	line, _, _ := strings.Cut(strings.TrimSpace(t.prompt), "\n")
	return audit.Preview(line, 80)
}

func (t *promptTransport) identity() string { return t.kind() + "\x00" + t.model + "\x00" + t.prompt }

// maxPromptAnswer bounds the answer read back: a decision is a few hundred
// bytes, and its reason goes on into the trace.
const maxPromptAnswer = 16 << 10

func (t *promptTransport) call(ctx context.Context, _ *ExternalHook, s hooks.Session, payload []byte) (outcome, error) {
	prompt := t.prompt
	if strings.Contains(prompt, "$ARGUMENTS") {
		prompt = strings.ReplaceAll(prompt, "$ARGUMENTS", string(payload))
	} else {
		prompt += "\n\n" + string(payload)
	}
	var answer string
	var err error
	if t.agent != nil {
		answer, err = t.agent.EvaluateAgent(ctx, t.model, prompt, s.WorkspaceRoot)
	} else {
		answer, err = t.evaluator.EvaluatePrompt(ctx, t.model, prompt)
	}
	if err != nil {
		if ctx.Err() != nil {
			return outcome{}, ctx.Err()
		}
		return outcome{}, fmt.Errorf("%s %q: the model could not be asked: %w", t.kind(), t.describe(), err)
	}
	ok, reason, err := readPromptAnswer(answer)
	if err != nil {
		return outcome{}, fmt.Errorf("%s %q: %w", t.kind(), t.describe(), err)
	}
	if ok {
		return outcome{stdout: []byte("{}")}, nil
	}
	if reason == "" {
		reason = fmt.Sprintf("%s hook %q answered ok: false without a reason", t.kind(), t.describe())
	}
	decision := map[string]any{"continue": false, "stopReason": reason}
	if t.event == "Stop" || t.event == "SubagentStop" {
		decision = map[string]any{"decision": "block", "reason": reason}
	}
	out, _ := json.Marshal(decision)
	return outcome{stdout: out}, nil
}

// readPromptAnswer reads {"ok": bool, "reason": string} from a model's
// answer: the whole answer, or the whole of one code fence. Nothing is
// fished out of prose: the event the model read is the agent's words, and
// a model that quotes an {"ok": true} from it must not be taken as saying
// it.
func readPromptAnswer(answer string) (ok bool, reason string, err error) {
	if len(answer) > maxPromptAnswer {
		return false, "", fmt.Errorf("the model's answer is %d bytes, over the %d a decision may take", len(answer), maxPromptAnswer)
	}
	body := strings.TrimSpace(answer)
	if fenced, found := strings.CutPrefix(body, "```"); found {
		fenced = strings.TrimPrefix(fenced, "json")
		if inner, closed := strings.CutSuffix(fenced, "```"); closed {
			body = strings.TrimSpace(inner)
		}
	}
	var decision struct {
		OK     *bool  `json:"ok"`
		Reason string `json:"reason"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&decision); err != nil || decision.OK == nil || dec.More() {
		return false, "", fmt.Errorf("the model answered %q, not one JSON object with a boolean \"ok\" ({\"ok\": true} or {\"ok\": false, \"reason\": \"…\"})", audit.Preview(answer, 200))
	}
	return *decision.OK, decision.Reason, nil
}
