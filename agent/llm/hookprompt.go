package llm

import (
	"context"
	"strings"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// HookPromptSystem is the system prompt a prompt hook's model gets: the
// hook's own prompt (with the event's JSON) is the user message, and the
// answer must be the decision object Claude Code's prompt hooks return.
const HookPromptSystem = `You evaluate a hook condition for an AI agent's runtime. The user message holds the condition to check and the event, as JSON.
Answer with only a JSON object, no other text:
{"ok": true} when the condition is met and the action may go on;
{"ok": false, "reason": "<one or two sentences saying why and what to do instead>"} when it is not.`

// HookAgentSystem is the system prompt of an agent hook's model: like a
// prompt hook's, with read-only tools to look at the workspace first.
const HookAgentSystem = `You verify a hook condition for an AI agent's runtime. The user message holds the condition to check and the event, as JSON.
You may call the tools given to read the workspace (they cannot change anything) as often as you need, then answer with only a JSON object, no other text:
{"ok": true} when the condition is met and the action may go on;
{"ok": false, "reason": "<one or two sentences saying why and what to do instead>"} when it is not.`

// HookPromptMaxTokens caps a decision: an object with a short reason.
const HookPromptMaxTokens = 512

// HookPromptEvaluator evaluates prompt hooks with a model (it satisfies
// claudecode.PromptEvaluator).
type HookPromptEvaluator struct {
	Provider Provider
	// Model, when set (FENIX_HOOK_MODEL), is used whatever a hook names.
	// Empty uses the hook's model, except Claude Code's aliases (haiku,
	// sonnet, opus, …), which this provider does not serve: those, and a
	// hook without a model, get the provider's default (FENIX_MODEL).
	Model string
}

// claudeModelAliases are the model names Claude Code resolves itself.
var claudeModelAliases = map[string]bool{"haiku": true, "sonnet": true, "opus": true, "opusplan": true, "default": true, "inherit": true}

// HookModel is the model a prompt or agent hook is evaluated with: the
// operator's override (FENIX_HOOK_MODEL) when set, else the hook's model
// unless it is one of Claude Code's aliases, else "" (the provider's
// default, FENIX_MODEL).
func HookModel(override, hookModel string) string {
	switch {
	case override != "":
		return override
	case claudeModelAliases[strings.ToLower(strings.TrimSpace(hookModel))]:
		return ""
	}
	return hookModel
}

// JudgeModel is the model a prompt or agent hook whose "model" field is
// hookModel is sent to through p: HookModel's answer, or p's default
// (FENIX_MODEL) when that is "" and p is a Router. The policy fingerprint
// names it, so switching judges is a new policy.
func JudgeModel(p Provider, override, hookModel string) string {
	model := HookModel(override, hookModel)
	if r, ok := p.(*Router); ok && r != nil && model == "" {
		model = r.DefaultModel
	}
	return model
}

// JudgeModel implements claudecode.JudgeModeler.
func (e HookPromptEvaluator) JudgeModel(hookModel string) string {
	return JudgeModel(e.Provider, e.Model, hookModel)
}

// EvaluatePrompt asks the model once, greedily, and returns its text.
func (e HookPromptEvaluator) EvaluatePrompt(ctx context.Context, model, prompt string) (string, error) {
	temperature := 0.0
	resp, err := e.Provider.Complete(ctx, Request{
		Model: HookModel(e.Model, model),
		Messages: []contract.Message{
			{Role: contract.RoleSystem, Content: HookPromptSystem},
			{Role: contract.RoleUser, Content: prompt},
		},
		MaxTokens:   HookPromptMaxTokens,
		Temperature: &temperature,
	})
	if err != nil {
		return "", err
	}
	answer := strings.TrimSpace(resp.Message.Content)
	if answer == "" {
		return "", fenixerr.New(fenixerr.TypeModelProvider, "hook model %q (provider %s) returned an empty answer (finish_reason %q)", resp.Model, resp.Provider, resp.FinishReason)
	}
	return answer, nil
}
