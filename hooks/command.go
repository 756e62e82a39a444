package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/fenixrt/fenix/audit"
)

// maxCommandOutput caps what is kept of a command hook's stdout and stderr.
const maxCommandOutput = 1 << 20

// commandWaitDelay bounds how long a finished command's leftover children
// may hold its output pipes open.
const commandWaitDelay = time.Second

// CommandHook runs an external command for one event, speaking Claude Code's
// hook protocol: the event as JSON on stdin; exit 0 with optional JSON on
// stdout to decide; exit 2 to block with stderr as the reason; any other
// exit is a non-blocking error, unless the hook is fail-closed.
//
// The command runs through sh -c in the event's workspace directory (else
// the settings file's directory) in its own process group, which is killed
// when the command times out, when ctx is cancelled and when the command
// ends, so a hook's processes never outlive it.
type CommandHook struct {
	name        string
	eventName   string
	event       Event
	matcher     *regexp.Regexp
	matcherText string
	command     string
	timeout     time.Duration
	failClosed  bool
	dir         string
}

var _ AgentHook = (*CommandHook)(nil)

// NewCommandHook validates cfg and builds the hook.
func NewCommandHook(cfg CommandHookConfig) (*CommandHook, error) {
	ev, ok := commandEvents[cfg.Event]
	if !ok {
		return nil, fmt.Errorf("command hook event %q is unknown; Fenix fires %s", cfg.Event, strings.Join(CommandEventNames(), ", "))
	}
	if strings.TrimSpace(cfg.Command) == "" {
		return nil, fmt.Errorf("command hook for %s has an empty command", cfg.Event)
	}
	re, err := compileMatcher(cfg.Matcher)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("command hook %q for %s has a negative timeout %s", cfg.Command, cfg.Event, cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultCommandTimeout
	}
	name := cfg.Name
	if name == "" {
		short := cfg.Command
		if len(short) > 60 {
			short = short[:57] + "..."
		}
		name = fmt.Sprintf("%s command %s", cfg.Event, short)
	}
	return &CommandHook{
		name:        name,
		eventName:   cfg.Event,
		event:       ev,
		matcher:     re,
		matcherText: cfg.Matcher,
		command:     cfg.Command,
		timeout:     cfg.Timeout,
		failClosed:  cfg.FailClosed,
		dir:         cfg.Dir,
	}, nil
}

func (h *CommandHook) Name() string { return h.name }

// FailClosed reports whether failures block instead of allow.
func (h *CommandHook) FailClosed() bool { return h.failClosed }

// Event is the Fenix event the hook handles.
func (h *CommandHook) Event() Event { return h.event }

func (h *CommandHook) HandlesEvent(ev Event) bool { return ev == h.event }

// matches applies the matcher to the event's subject; events without a
// subject (StepComplete) ignore the matcher.
func (h *CommandHook) matches(ev Event, subject string, hasSubject bool) bool {
	if ev != h.event {
		return false
	}
	if h.matcher == nil || !hasSubject {
		return true
	}
	return h.matcher.MatchString(subject)
}

// commandInput is the stdin JSON: Claude Code's field names, plus Fenix's
// identifiers and per-event details.
type commandInput struct {
	SessionID      string `json:"session_id"`
	HookEventName  string `json:"hook_event_name"`
	Cwd            string `json:"cwd"`
	RunID          string `json:"run_id,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	TurnID         string `json:"turn_id,omitempty"`
	AgentProfile   string `json:"agent_profile,omitempty"`
	IsSubagent     bool   `json:"is_subagent,omitempty"`
	WorkspaceRoot  string `json:"workspace_root,omitempty"`
	// IsReplay is sent only when set: a policy what-if, no tool will run.
	IsReplay bool `json:"is_replay,omitempty"`

	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    map[string]any  `json:"tool_input,omitzero"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	ToolOutput   *string         `json:"tool_output,omitempty"`
	DurationMS   *int64          `json:"duration_ms,omitempty"`
	Status       string          `json:"status,omitempty"`
	Error        string          `json:"error,omitempty"`
	ErrorType    string          `json:"error_type,omitempty"`
	Permission   string          `json:"permission,omitempty"`

	Source     string      `json:"source,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	Step       int         `json:"step,omitempty"`
	Usage      *TokenUsage `json:"usage,omitempty"`
	AgentID    string      `json:"agent_id,omitempty"`
	AgentType  string      `json:"agent_type,omitempty"`
	Task       string      `json:"task,omitempty"`
	Trigger    string      `json:"trigger,omitempty"`
	Compaction any         `json:"compaction,omitempty"`
	Stage      string      `json:"stage,omitempty"`
}

func (h *CommandHook) newInput(s Session) commandInput {
	return commandInput{
		SessionID:      s.SessionID,
		HookEventName:  h.eventName,
		Cwd:            h.workDir(s),
		RunID:          s.RunID,
		ConversationID: s.ConversationID,
		TurnID:         s.TurnID,
		AgentProfile:   s.Profile,
		IsSubagent:     s.IsSubagent,
		WorkspaceRoot:  s.WorkspaceRoot,
		IsReplay:       s.IsReplay,
	}
}

func (h *CommandHook) workDir(s Session) string {
	if d := s.WorkDir(); d != "" {
		return d
	}
	return h.dir
}

func toolInputOrEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// verdict is what the command decided, independent of the event.
type verdict struct {
	block       bool
	blockReason string
	// exitedTwo marks a block by exit status 2 rather than by JSON.
	exitedTwo    bool
	ask          bool
	askReason    string
	allow        bool
	allowReason  string
	updatedInput map[string]any
	contexts     []string
	// updatedOutput is set when the command replaced the tool output.
	updatedOutput *string
}

func (v verdict) additionalContext() string { return strings.Join(v.contexts, "\n") }

// run executes the command and interprets its exit status and output. A
// non-nil error is a hook failure: crash, timeout, cancellation or invalid
// JSON.
func (h *CommandHook) run(ctx context.Context, s Session, input commandInput) (verdict, error) {
	payload, err := json.Marshal(input)
	if err != nil {
		return verdict{}, fmt.Errorf("hook %q: encoding the %s event as JSON: %w", h.name, h.eventName, err)
	}
	runCtx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()

	dir := h.workDir(s)
	cmd := exec.CommandContext(runCtx, "/bin/sh", "-c", h.command)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(payload)
	stdout := &cappedBuffer{max: maxCommandOutput}
	stderr := &cappedBuffer{max: maxCommandOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = append(os.Environ(),
		"FENIX_HOOK_EVENT="+h.eventName,
		"FENIX_SESSION_ID="+s.SessionID,
		"FENIX_HOOKS_DIR="+h.dir,
	)
	if s.WorkspaceRoot != "" {
		cmd.Env = append(cmd.Env, "CLAUDE_PROJECT_DIR="+s.WorkspaceRoot, "FENIX_WORKSPACE_ROOT="+s.WorkspaceRoot)
	}
	cmd.WaitDelay = commandWaitDelay
	useProcessGroup(cmd)

	runErr := cmd.Run()
	killProcessGroup(cmd)

	if cmd.ProcessState == nil {
		return verdict{}, fmt.Errorf("hook %q: command %q could not start in %s: %w", h.name, h.command, dir, runErr)
	}
	// A command that exited on its own before the deadline keeps its result
	// even if the deadline passed while it was being collected.
	if !cmd.ProcessState.Exited() && runCtx.Err() != nil {
		if ctx.Err() != nil {
			return verdict{}, fmt.Errorf("hook %q: command %q was cancelled (%v); its process group was killed", h.name, h.command, ctx.Err())
		}
		return verdict{}, fmt.Errorf("hook %q: command %q timed out after %s; its process group was killed", h.name, h.command, h.timeout)
	}
	code := cmd.ProcessState.ExitCode()
	switch code {
	case 0:
		v, err := parseCommandOutput(stdout.Bytes())
		if err != nil {
			return verdict{}, fmt.Errorf("hook %q: command %q printed invalid hook JSON on stdout: %w", h.name, h.command, err)
		}
		return v, nil
	case 2:
		reason := strings.TrimSpace(stderr.String())
		if reason == "" {
			reason = fmt.Sprintf("hook %q exited with status 2 and no message on stderr", h.name)
		}
		return verdict{block: true, blockReason: reason, exitedTwo: true}, nil
	case -1:
		return verdict{}, fmt.Errorf("hook %q: command %q was killed (%v)%s", h.name, h.command, cmd.ProcessState, stderrSuffix(stderr))
	default:
		return verdict{}, fmt.Errorf("hook %q: command %q exited with status %d%s", h.name, h.command, code, stderrSuffix(stderr))
	}
}

func stderrSuffix(b *cappedBuffer) string {
	msg := strings.TrimSpace(b.String())
	if msg == "" {
		return ""
	}
	msg = audit.Preview(msg, 500)
	return ": " + msg
}

// commandOutput is Claude Code's hook JSON output.
type commandOutput struct {
	Continue           *bool               `json:"continue"`
	StopReason         string              `json:"stopReason"`
	Decision           string              `json:"decision"`
	Reason             string              `json:"reason"`
	AdditionalContext  string              `json:"additionalContext"`
	UpdatedToolOutput  json.RawMessage     `json:"updatedToolOutput"`
	HookSpecificOutput *hookSpecificOutput `json:"hookSpecificOutput"`
}

type hookSpecificOutput struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             map[string]any  `json:"updatedInput"`
	AdditionalContext        string          `json:"additionalContext"`
	UpdatedToolOutput        json.RawMessage `json:"updatedToolOutput"`
	UpdatedMCPToolOutput     json.RawMessage `json:"updatedMCPToolOutput"`
	// Decision is the PermissionRequest form: {"behavior": "allow"|"deny"}.
	Decision *struct {
		Behavior     string         `json:"behavior"`
		Message      string         `json:"message"`
		UpdatedInput map[string]any `json:"updatedInput"`
	} `json:"decision"`
}

// parseCommandOutput reads exit-0 stdout: empty or plain text means "no
// decision"; text that starts like JSON must be valid hook JSON.
func parseCommandOutput(stdout []byte) (verdict, error) {
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return verdict{}, nil
	}
	var out commandOutput
	if err := json.Unmarshal(trimmed, &out); err != nil {
		return verdict{}, err
	}
	var v verdict
	if out.Continue != nil && !*out.Continue {
		v.block = true
		v.blockReason = out.StopReason
		if v.blockReason == "" {
			v.blockReason = "hook asked to stop (continue: false)"
		}
	}
	switch out.Decision {
	case "":
	case "block":
		if !v.block {
			v.block, v.blockReason = true, out.Reason
		}
	case "approve":
		v.allow, v.allowReason = true, out.Reason
	default:
		return verdict{}, fmt.Errorf("decision %q is not \"block\" or \"approve\"", out.Decision)
	}
	if out.AdditionalContext != "" {
		v.contexts = append(v.contexts, out.AdditionalContext)
	}
	rawOutput := out.UpdatedToolOutput
	if hso := out.HookSpecificOutput; hso != nil {
		switch hso.PermissionDecision {
		case "":
		case "deny":
			if !v.block {
				v.block, v.blockReason = true, hso.PermissionDecisionReason
			}
		case "ask":
			v.ask, v.askReason = true, hso.PermissionDecisionReason
		case "allow":
			v.allow, v.allowReason = true, hso.PermissionDecisionReason
		default:
			return verdict{}, fmt.Errorf("hookSpecificOutput.permissionDecision %q is not allow, deny or ask", hso.PermissionDecision)
		}
		if d := hso.Decision; d != nil {
			switch d.Behavior {
			case "deny":
				if !v.block {
					v.block, v.blockReason = true, d.Message
				}
			case "allow":
				v.allow, v.allowReason = true, d.Message
			default:
				return verdict{}, fmt.Errorf("hookSpecificOutput.decision.behavior %q is not allow or deny", d.Behavior)
			}
			if d.UpdatedInput != nil {
				v.updatedInput = d.UpdatedInput
			}
		}
		if hso.UpdatedInput != nil {
			v.updatedInput = hso.UpdatedInput
		}
		if hso.AdditionalContext != "" {
			v.contexts = append(v.contexts, hso.AdditionalContext)
		}
		for _, raw := range []json.RawMessage{hso.UpdatedToolOutput, hso.UpdatedMCPToolOutput} {
			if len(raw) > 0 {
				rawOutput = raw
			}
		}
	}
	if len(rawOutput) > 0 && string(rawOutput) != "null" {
		var text string
		if err := json.Unmarshal(rawOutput, &text); err != nil {
			// Structured output replaces the content as compact JSON text.
			var compact bytes.Buffer
			if err := json.Compact(&compact, rawOutput); err != nil {
				return verdict{}, fmt.Errorf("updatedToolOutput: %w", err)
			}
			text = compact.String()
		}
		v.updatedOutput = &text
	}
	return v, nil
}

func (h *CommandHook) failClosedReason(err error) string {
	return fmt.Sprintf("guard hook %q failed closed: %v", h.name, err)
}

func (h *CommandHook) OnSessionStart(ctx context.Context, ev SessionStartEvent) error {
	if !h.matches(EventSessionStart, ev.Source, true) {
		return nil
	}
	in := h.newInput(ev.Session)
	in.Source = ev.Source
	return h.notify(ctx, ev.Session, in)
}

func (h *CommandHook) PreToolUse(ctx context.Context, ev PreToolUseEvent) (PreToolUseAction, error) {
	if !h.matches(EventPreToolUse, ev.ToolName, true) {
		return Continue(), nil
	}
	in := h.newInput(ev.Session)
	in.ToolName, in.ToolUseID, in.ToolInput = ev.ToolName, ev.CallID, toolInputOrEmpty(ev.ToolInput)
	v, err := h.run(ctx, ev.Session, in)
	if err != nil {
		if h.failClosed {
			return Block(h.failClosedReason(err)), err
		}
		return Continue(), err
	}
	switch {
	case v.block:
		reason := v.blockReason
		if reason == "" {
			reason = fmt.Sprintf("tool %q blocked by hook %q", ev.ToolName, h.name)
		}
		return Block(reason), nil
	case v.ask:
		// A human decides; an updatedInput sent with "ask" is not applied.
		permission := v.askReason
		if permission == "" {
			permission = fmt.Sprintf("hook %q asks for approval to run %s", h.name, ev.ToolName)
		}
		return RequirePermission(permission, ev.ToolName), nil
	case v.updatedInput != nil || len(v.contexts) > 0:
		return MutateInput(v.updatedInput, v.additionalContext()), nil
	}
	return Continue(), nil
}

func (h *CommandHook) PostToolUse(ctx context.Context, ev PostToolUseEvent) (PostToolUseAction, error) {
	if !h.matches(EventPostToolUse, ev.ToolName, true) {
		return KeepOutput(), nil
	}
	in := h.newInput(ev.Session)
	in.ToolName, in.ToolUseID, in.ToolInput = ev.ToolName, ev.CallID, toolInputOrEmpty(ev.ToolInput)
	content := ev.Content
	in.ToolOutput = &content
	if len(ev.RawResult) > 0 && json.Valid(ev.RawResult) {
		in.ToolResponse = ev.RawResult
	} else {
		in.ToolResponse, _ = json.Marshal(content)
	}
	duration := ev.DurationMS
	in.DurationMS = &duration
	in.Status = ev.Status
	v, err := h.run(ctx, ev.Session, in)
	if err != nil {
		return KeepOutput(), err
	}
	action := KeepOutput()
	if v.updatedOutput != nil {
		action = MutateOutput(*v.updatedOutput)
	}
	return action, h.cannotBlock(v)
}

func (h *CommandHook) PostToolUseFailure(ctx context.Context, ev PostToolUseFailureEvent) error {
	if !h.matches(EventPostToolUseFailure, ev.ToolName, true) {
		return nil
	}
	in := h.newInput(ev.Session)
	in.ToolName, in.ToolUseID, in.ToolInput = ev.ToolName, ev.CallID, toolInputOrEmpty(ev.ToolInput)
	duration := ev.DurationMS
	in.DurationMS = &duration
	in.Error, in.ErrorType = ev.ErrorMessage, ev.ErrorType
	return h.notify(ctx, ev.Session, in)
}

// PermissionRequest maps deny (or exit 2) to Deny, allow to Allow and ask
// or silence to NoOpinion, which leaves the decision to a human.
func (h *CommandHook) PermissionRequest(ctx context.Context, ev PermissionRequestEvent) (PermissionDecision, error) {
	if !h.matches(EventPermissionRequest, ev.ToolName, true) {
		return NoOpinion(), nil
	}
	in := h.newInput(ev.Session)
	in.ToolName, in.ToolUseID, in.ToolInput = ev.ToolName, ev.CallID, toolInputOrEmpty(ev.ToolInput)
	in.Permission = ev.Permission
	v, err := h.run(ctx, ev.Session, in)
	if err != nil {
		if h.failClosed {
			return Deny(h.failClosedReason(err)), err
		}
		return NoOpinion(), err
	}
	switch {
	case v.block:
		return Deny(v.blockReason), nil
	case v.allow:
		return Allow(v.allowReason), nil
	}
	return NoOpinion(), nil
}

func (h *CommandHook) OnStepComplete(ctx context.Context, ev StepCompleteEvent) error {
	if !h.matches(EventStepComplete, "", false) {
		return nil
	}
	in := h.newInput(ev.Session)
	in.Step = ev.Step
	usage := ev.Usage
	in.Usage = &usage
	return h.notify(ctx, ev.Session, in)
}

func (h *CommandHook) OnSessionStop(ctx context.Context, ev SessionStopEvent) error {
	if !h.matches(EventSessionStop, ev.StopReason, true) {
		return nil
	}
	in := h.newInput(ev.Session)
	in.Reason, in.Error = ev.StopReason, ev.ErrorMessage
	return h.notify(ctx, ev.Session, in)
}

func (h *CommandHook) OnSubagentStart(ctx context.Context, ev SubagentStartEvent) error {
	if !h.matches(EventSubagentStart, ev.SubagentProfile, true) {
		return nil
	}
	in := h.newInput(ev.Session)
	in.AgentID, in.AgentType, in.Task = ev.SubagentID, ev.SubagentProfile, ev.Task
	return h.notify(ctx, ev.Session, in)
}

func (h *CommandHook) OnSubagentStop(ctx context.Context, ev SubagentStopEvent) error {
	if !h.matches(EventSubagentStop, ev.SubagentProfile, true) {
		return nil
	}
	in := h.newInput(ev.Session)
	in.AgentID, in.AgentType = ev.SubagentID, ev.SubagentProfile
	in.Reason, in.Error = ev.StopReason, ev.ErrorMessage
	return h.notify(ctx, ev.Session, in)
}

func (h *CommandHook) OnPreCompact(ctx context.Context, ev PreCompactEvent) error {
	if !h.matches(EventPreCompact, ev.Trigger, true) {
		return nil
	}
	in := h.newInput(ev.Session)
	in.Trigger = ev.Trigger
	in.Compaction = struct {
		MessageCount int `json:"message_count"`
		TokenCount   int `json:"token_count"`
		Threshold    int `json:"threshold,omitempty"`
	}{ev.MessageCount, ev.TokenCount, ev.Threshold}
	return h.notify(ctx, ev.Session, in)
}

func (h *CommandHook) OnPostCompact(ctx context.Context, ev PostCompactEvent) error {
	if !h.matches(EventPostCompact, ev.Trigger, true) {
		return nil
	}
	in := h.newInput(ev.Session)
	in.Trigger = ev.Trigger
	in.Compaction = struct {
		MessagesBefore int `json:"messages_before"`
		MessagesAfter  int `json:"messages_after"`
		TokensBefore   int `json:"tokens_before"`
		TokensAfter    int `json:"tokens_after"`
	}{ev.MessagesBefore, ev.MessagesAfter, ev.TokensBefore, ev.TokensAfter}
	return h.notify(ctx, ev.Session, in)
}

func (h *CommandHook) OnError(ctx context.Context, ev ErrorEvent) error {
	if !h.matches(EventError, ev.ErrorType, true) {
		return nil
	}
	in := h.newInput(ev.Session)
	in.Stage, in.ErrorType, in.Error = ev.Stage, ev.ErrorType, ev.ErrorMessage
	in.ToolName, in.ToolUseID = ev.ToolName, ev.CallID
	return h.notify(ctx, ev.Session, in)
}

// notify runs the command for an event that cannot be steered.
func (h *CommandHook) notify(ctx context.Context, s Session, in commandInput) error {
	v, err := h.run(ctx, s, in)
	if err != nil {
		return err
	}
	return h.cannotBlock(v)
}

// cannotBlock reports a block requested on an event that has nothing left
// to block, so the request shows in the trace instead of vanishing.
func (h *CommandHook) cannotBlock(v verdict) error {
	if !v.block {
		return nil
	}
	how := "asked to block"
	if v.exitedTwo {
		how = "exited with status 2"
	}
	return fmt.Errorf("hook %q %s on %s, which cannot be blocked: %s", h.name, how, h.eventName, v.blockReason)
}

// cappedBuffer keeps the first max bytes written and discards the rest, so a
// chatty hook cannot exhaust memory; writes never fail, so the command is
// never killed by a broken pipe.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *cappedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *cappedBuffer) String() string { return b.buf.String() }
