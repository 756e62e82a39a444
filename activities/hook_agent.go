package activities

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workspace"
)

// HookAgentTools are what an agent hook's model may call: reading the
// workspace, nothing that changes it or reaches beyond it.
var HookAgentTools = []string{"workspace_read", "workspace_list", "workspace_search"}

// Agent hook bounds: a decision within a few model turns, each tool
// result short enough that the turns fit a small model's context.
const (
	HookAgentMaxTurns       = 20
	hookAgentMaxResultBytes = 16 << 10
	hookAgentMaxTokens      = 1024
)

// HookAgent evaluates Claude Code "agent" hooks (it satisfies
// claudecode.AgentEvaluator): the hook's prompt goes to the worker's model
// with HookAgentTools over the session's workspace, confined and judged
// by the permission rules as the agent's own reads are, and its final
// answer is the decision. The hooks load before the activities exist, so
// the worker binds them once they do.
type HookAgent struct {
	// Model is the operator's override (FENIX_HOOK_MODEL); see
	// llm.HookModel.
	Model string

	mu   sync.Mutex
	acts *Activities
}

// JudgeModel implements claudecode.JudgeModeler with the bound
// activities' model.
func (h *HookAgent) JudgeModel(hookModel string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var p llm.Provider
	if h.acts != nil {
		p = h.acts.Model
	}
	return llm.JudgeModel(p, h.Model, hookModel)
}

// Bind gives the hook agent the activities whose model, tools, permission
// rules and redactor it uses.
func (h *HookAgent) Bind(a *Activities) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.acts = a
}

// EvaluateAgent runs the hook's model until it answers without a tool
// call, at most HookAgentMaxTurns times, and returns that answer.
func (h *HookAgent) EvaluateAgent(ctx context.Context, model, prompt, root string) (string, error) {
	h.mu.Lock()
	a := h.acts
	h.mu.Unlock()
	if a == nil || a.Model == nil {
		return "", fenixerr.New(fenixerr.TypeModelProvider, "agent hook: this worker has no model (FENIX_MODEL)")
	}
	env := &tools.Env{CallID: "agent-hook", Logger: a.logger().With("hook", "agent"), Host: a.Host}
	if root != "" {
		ws, err := workspace.Open(root)
		if err != nil {
			return "", err
		}
		defer ws.Close()
		a.guardWorkspace(ws)
		env.Workspace = ws
		a.judgeWorkspace(env, pinnedPath{})
	}
	specs := a.toolSpecs(HookAgentTools)
	messages := []contract.Message{{Role: contract.RoleSystem, Content: llm.HookAgentSystem}, {Role: contract.RoleUser, Content: prompt}}
	temperature := 0.0
	for range HookAgentMaxTurns {
		resp, err := a.Model.Complete(ctx, llm.Request{Model: llm.HookModel(h.Model, model), Messages: messages, Tools: specs,
			MaxTokens: hookAgentMaxTokens, Temperature: &temperature})
		if err != nil {
			return "", err
		}
		if len(resp.Message.ToolCalls) == 0 {
			answer := strings.TrimSpace(resp.Message.Content)
			if answer == "" {
				return "", fenixerr.New(fenixerr.TypeModelProvider, "agent hook model %q (provider %s) returned an empty answer (finish_reason %q)", resp.Model, resp.Provider, resp.FinishReason)
			}
			return answer, nil
		}
		messages = append(messages, resp.Message)
		for _, call := range resp.Message.ToolCalls {
			messages = append(messages, contract.Message{Role: contract.RoleTool, ToolCallID: call.CallID, Content: a.hookAgentRead(ctx, env, call)})
		}
	}
	return "", fmt.Errorf("agent hook: no decision after %d model turns", HookAgentMaxTurns)
}

// hookAgentRead runs one of the hook model's tool calls and returns what
// the model reads back: the projection, or the error, redacted and
// bounded.
func (a *Activities) hookAgentRead(ctx context.Context, env *tools.Env, call contract.ToolCall) string {
	var text string
	if !slices.Contains(HookAgentTools, call.ToolName) {
		text = fmt.Sprintf("error: tool %q is not available to a hook; use %s", call.ToolName, strings.Join(HookAgentTools, ", "))
	} else if raw, err := a.Tools.Execute(ctx, env, call); err != nil {
		text = "error: " + fenixerr.As(err).Message
	} else if p, err := a.Tools.Project(call, raw); err != nil {
		text = "error: " + fenixerr.As(err).Message
	} else {
		text = p.Content
	}
	if a.Redactor != nil {
		text, _ = a.Redactor.String(text)
	}
	return contract.TruncateText(text, hookAgentMaxResultBytes)
}
