package hooks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// LogFunc logs one message with alternating key/value pairs. slog.Logger's
// and the Temporal workflow logger's Info/Warn methods have this shape.
type LogFunc func(msg string, keyvals ...any)

// HookDecision is one hook's outcome for one event, kept for the trace.
type HookDecision struct {
	Hook string `json:"hook"`
	Kind Kind   `json:"kind"`
	// Reason is the block/deny reason, the permission asked for, or a short
	// note on what the hook changed.
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
	Panicked   bool   `json:"panicked,omitempty"`
	// Essential marks the error of an EssentialHook: the stage must fail.
	Essential bool `json:"essential,omitempty"`
}

// PermissionRequirement is the first PermissionRequired a PreToolUse hook
// returned.
type PermissionRequirement struct {
	Permission string `json:"permission"`
	ToolName   string `json:"tool_name"`
	Hook       string `json:"hook"`
	// Deferred marks a hook's "defer": the decision comes from outside the
	// run (decide_permission), PermissionRequest hooks are not asked.
	Deferred bool `json:"deferred,omitempty"`
}

// PreToolUseResult is the aggregated PreToolUse verdict.
type PreToolUseResult struct {
	// Action is Block when a hook blocked; else PermissionRequired when a
	// hook asked for permission; else MutateInput when a hook changed the
	// arguments or added context (UpdatedArgs set only if ArgsMutated);
	// else Continue.
	Action PreToolUseAction `json:"action"`
	// FinalArgs are the arguments to call the tool with.
	FinalArgs   map[string]any `json:"final_args"`
	ArgsMutated bool           `json:"args_mutated,omitempty"`
	// AdditionalContext joins every hook's additional_context with "\n".
	AdditionalContext  string                 `json:"additional_context,omitempty"`
	PermissionRequired *PermissionRequirement `json:"permission_required,omitempty"`
	// DecidedBy names the hook that blocked or asked for permission.
	DecidedBy string `json:"decided_by,omitempty"`
	// Halt is set when a hook asked to end the whole turn; the call is
	// blocked too.
	Halt *Halt `json:"halt,omitempty"`
	// Permission is the permission rule (or mode) that judged the call,
	// when one did.
	Permission *PolicyVerdict `json:"permission_rule,omitempty"`
	Decisions  []HookDecision `json:"decisions"`
}

// Blocked reports whether a hook blocked the call.
func (r PreToolUseResult) Blocked() bool { return r.Action.Kind == KindBlock }

// NeedsPermission reports whether the call must wait for a permission
// decision (and was not blocked outright).
func (r PreToolUseResult) NeedsPermission() bool {
	return !r.Blocked() && r.PermissionRequired != nil
}

// PostToolUseResult is the aggregated PostToolUse verdict.
type PostToolUseResult struct {
	FinalContent string `json:"final_content"`
	Mutated      bool   `json:"mutated"`
	// MutatedBy names the hook whose MutateOutput won.
	MutatedBy string `json:"mutated_by,omitempty"`
	// AdditionalContext joins every hook's context for the model.
	AdditionalContext string         `json:"additional_context,omitempty"`
	Halt              *Halt          `json:"halt,omitempty"`
	Decisions         []HookDecision `json:"decisions"`
}

// PermissionRequestResult is the aggregated PermissionRequest verdict.
// Decision.Kind is KindNoOpinion when no hook settled it: ask a human.
type PermissionRequestResult struct {
	Decision  PermissionDecision `json:"decision"`
	DecidedBy string             `json:"decided_by,omitempty"`
	// Halt is set when a hook asked to end the turn; the request is denied.
	Halt      *Halt          `json:"halt,omitempty"`
	Decisions []HookDecision `json:"decisions"`
}

// Settled reports whether a hook allowed or denied the request.
func (r PermissionRequestResult) Settled() bool { return r.Decision.kind() != KindNoOpinion }

// Summary reports which hooks handled a fire-and-forget event and which
// failed.
type Summary struct {
	Event Event `json:"event"`
	// AdditionalContext joins the context FeedbackHooks gave for the model.
	AdditionalContext string `json:"additional_context,omitempty"`
	// Halt is the first request to end the turn.
	Halt      *Halt          `json:"halt,omitempty"`
	Decisions []HookDecision `json:"decisions"`
	// SessionEnv joins what SessionStart hooks wrote to $CLAUDE_ENV_FILE,
	// in hook order (JoinSessionEnv); on a SessionStart stage's result,
	// the session environment the run's commands get from then on.
	SessionEnv string `json:"session_env,omitempty"`
	// Blocked is the first hook's refusal of what the event announces
	// (PreCompact: the compaction; ConfigChange: the reload), naming the
	// hook.
	Blocked string `json:"blocked,omitempty"`
}

// Err joins the errors of the hooks that failed, each naming its hook, or
// returns nil.
func (s Summary) Err() error { return decisionErrors(s.Event, s.Decisions) }

// EssentialErr joins the errors of the EssentialHooks that failed, or
// returns nil: a stage that gets one must fail rather than go on as if the
// hook had done its work.
func EssentialErr(ev Event, ds []HookDecision) error {
	var errs []error
	for _, d := range ds {
		if d.Essential && d.Error != "" {
			errs = append(errs, fmt.Errorf("%s hook %q: %s", ev, d.Hook, d.Error))
		}
	}
	return errors.Join(errs...)
}

func decisionErrors(ev Event, ds []HookDecision) error {
	var errs []error
	for _, d := range ds {
		if d.Error != "" {
			errs = append(errs, fmt.Errorf("%s hook %q: %s", ev, d.Hook, d.Error))
		}
	}
	return errors.Join(errs...)
}

// Registry holds hooks in registration order and aggregates their answers.
// Add every hook before the first Run; the Run methods only read the hook
// list and may then be called concurrently (for parallel tool calls),
// provided the hooks themselves are safe for that.
type Registry struct {
	entries []entry
	sources []SourceInfo
	policy  []PolicySource // hook settings files as read, for PolicyFingerprint
	now     func() time.Time
	logf    LogFunc
	// permissions is consulted after the PreToolUse hooks.
	permissions PermissionPolicy
	// concurrency bounds how many ConcurrentHooks of one event run at once.
	concurrency int
}

type entry struct {
	hook       AgentHook
	name       string
	failClosed bool
	essential  bool
}

// Option configures a Registry.
type Option func(*Registry)

// WithClock sets the clock used to time hooks. Workflow code passes a
// deterministic clock (workflow.Now); the default is time.Now.
func WithClock(now func() time.Time) Option { return func(r *Registry) { r.now = now } }

// WithLogger logs every hook error and panic through logf.
func WithLogger(logf LogFunc) Option { return func(r *Registry) { r.logf = logf } }

// NewRegistry returns an empty registry.
func NewRegistry(opts ...Option) *Registry {
	r := &Registry{now: time.Now, concurrency: DefaultConcurrency}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Add appends a hook; hooks run in the order they were added.
func (r *Registry) Add(h AgentHook) {
	if h == nil {
		panic("hooks: Registry.Add called with a nil hook")
	}
	e := entry{hook: h, name: h.Name()}
	if fc, ok := h.(FailClosedHook); ok {
		e.failClosed = fc.FailClosed()
	}
	if es, ok := h.(EssentialHook); ok {
		e.essential = es.Essential()
	}
	r.entries = append(r.entries, e)
}

// Names lists the registered hooks in order.
func (r *Registry) Names() []string {
	names := make([]string, len(r.entries))
	for i, e := range r.entries {
		names[i] = e.name
	}
	return names
}

// Len is the number of registered hooks.
func (r *Registry) Len() int { return len(r.entries) }

func (r *Registry) subscribers(ev Event) []entry {
	out := make([]entry, 0, len(r.entries))
	for _, e := range r.entries {
		if f, ok := e.hook.(EventFilter); ok && !f.HandlesEvent(ev) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// Selective is implemented by hooks that run only for some occurrences of
// an event (a matcher, an "if" rule). The registry asks before calling,
// and leaves a hook that does not apply out of the decisions and the
// trace: they list only the hooks that ran.
type Selective interface {
	Applies(ev Event, payload any) bool
}

// subscribersFor is subscribers(ev) without the Selective hooks that do
// not apply to payload, the event value.
func (r *Registry) subscribersFor(ev Event, payload any) []entry {
	all := r.subscribers(ev)
	out := all[:0]
	for _, e := range all {
		if s, ok := e.hook.(Selective); ok && !s.Applies(ev, payload) {
			continue
		}
		if !inScope(e.hook, payload) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// invoke calls one hook method, recovering a panic into onPanic's value and
// timing the call.
func invoke[T any](r *Registry, e entry, ev Event, call func() (T, error), onPanic func(p any) T) (T, HookDecision) {
	d := HookDecision{Hook: e.name}
	start := r.now()
	var out T
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				out = onPanic(p)
				err = fmt.Errorf("panic: %v", p)
				d.Panicked = true
			}
		}()
		out, err = call()
	}()
	d.DurationMS = r.now().Sub(start).Milliseconds()
	if err != nil {
		d.Error = err.Error()
		d.Essential = e.essential
		if r.logf != nil {
			r.logf("lifecycle hook failed", "hook", e.name, "event", string(ev), "error", d.Error, "panicked", d.Panicked)
		}
	}
	return out, d
}

func failedClosedReason(name string, p any) string {
	return fmt.Sprintf("hook %q failed closed: it panicked: %v", name, p)
}

// runAll runs every subscriber of a fire-and-forget event: FeedbackHooks
// through Feedback with payload (their context and halt are collected),
// the others through call.
func (r *Registry) runAll(ctx context.Context, ev Event, payload any, call func(AgentHook) error) Summary {
	s := Summary{Event: ev, Decisions: []HookDecision{}}
	var collected feedback
	subs, run := runHooks(r, ev, payload, func(e entry) func() (Feedback, error) {
		return func() (Feedback, error) {
			if fh, ok := e.hook.(FeedbackHook); ok {
				return fh.Feedback(ctx, payload)
			}
			return Feedback{}, call(e.hook)
		}
	}, func(entry, any) Feedback { return Feedback{} })
	env := ""
	for i, e := range subs {
		fb, d := run.get(i)
		d.Kind = KindRan
		notes := collected.take(e.name, fb.AdditionalContext, fb.Halt)
		if fb.Block != "" {
			notes = append(notes, "block: "+fb.Block)
			if s.Blocked == "" {
				s.Blocked = fmt.Sprintf("hook %q: %s", e.name, fb.Block)
			}
		}
		if fb.SessionEnv != "" {
			if joined, err := JoinSessionEnv(env, fb.SessionEnv); err != nil {
				d.Error = strings.TrimPrefix(d.Error+"; ", "; ") + fmt.Sprintf("its CLAUDE_ENV_FILE is not applied: with the hooks before it, %v", err)
			} else {
				env = joined
				notes = append(notes, "wrote CLAUDE_ENV_FILE")
			}
		}
		d.Reason = strings.Join(notes, ", ")
		s.Decisions = append(s.Decisions, d)
	}
	s.AdditionalContext, s.Halt, s.SessionEnv = collected.context(), collected.halt, env
	return s
}

// RunSessionStart notifies every hook that a session started.
func (r *Registry) RunSessionStart(ctx context.Context, ev SessionStartEvent) Summary {
	return r.runAll(ctx, EventSessionStart, ev, func(h AgentHook) error { return h.OnSessionStart(ctx, ev) })
}

// RunPostToolUseFailure notifies every hook that a tool call failed.
func (r *Registry) RunPostToolUseFailure(ctx context.Context, ev PostToolUseFailureEvent) Summary {
	hookEv := ev
	hookEv.ToolInput = CloneArgs(ev.ToolInput)
	return r.runAll(ctx, EventPostToolUseFailure, hookEv, func(h AgentHook) error {
		hookEv := ev
		hookEv.ToolInput = CloneArgs(ev.ToolInput)
		return h.PostToolUseFailure(ctx, hookEv)
	})
}

// RunStepComplete notifies every hook that a ReAct step ended.
func (r *Registry) RunStepComplete(ctx context.Context, ev StepCompleteEvent) Summary {
	return r.runAll(ctx, EventStepComplete, ev, func(h AgentHook) error { return h.OnStepComplete(ctx, ev) })
}

// RunSessionStop notifies every hook that the session ended. Call it with a
// context that is not already cancelled (a disconnected one after a
// cancel), or hooks doing I/O will fail.
func (r *Registry) RunSessionStop(ctx context.Context, ev SessionStopEvent) Summary {
	return r.runAll(ctx, EventSessionStop, ev, func(h AgentHook) error { return h.OnSessionStop(ctx, ev) })
}

// RunSubagentStart notifies every hook that a subagent started.
func (r *Registry) RunSubagentStart(ctx context.Context, ev SubagentStartEvent) Summary {
	return r.runAll(ctx, EventSubagentStart, ev, func(h AgentHook) error { return h.OnSubagentStart(ctx, ev) })
}

// RunSubagentStop notifies every hook that a subagent stopped.
func (r *Registry) RunSubagentStop(ctx context.Context, ev SubagentStopEvent) Summary {
	return r.runAll(ctx, EventSubagentStop, ev, func(h AgentHook) error { return h.OnSubagentStop(ctx, ev) })
}

// RunPreCompact notifies every hook that compaction is about to run.
func (r *Registry) RunPreCompact(ctx context.Context, ev PreCompactEvent) Summary {
	return r.runAll(ctx, EventPreCompact, ev, func(h AgentHook) error { return h.OnPreCompact(ctx, ev) })
}

// RunPostCompact notifies every hook that compaction ran.
func (r *Registry) RunPostCompact(ctx context.Context, ev PostCompactEvent) Summary {
	return r.runAll(ctx, EventPostCompact, ev, func(h AgentHook) error { return h.OnPostCompact(ctx, ev) })
}

// RunError notifies every hook that a stage failed.
func (r *Registry) RunError(ctx context.Context, ev ErrorEvent) Summary {
	return r.runAll(ctx, EventError, ev, func(h AgentHook) error { return h.OnError(ctx, ev) })
}

func joinErr(existing, add string) string {
	if existing == "" {
		return add
	}
	return existing + "; " + add
}

// CloneArgs deep-copies JSON-shaped arguments so one hook cannot change
// what another hook, or the caller, sees. The copy does not depend on map
// iteration order, so it is safe in workflow code.
//
//workflowcheck:ignore
func CloneArgs(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return CloneArgs(t)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = cloneValue(x)
		}
		return out
	default:
		return v
	}
}

// WorkspacePinner is a hook that runs scripts it takes from each
// workspace (a fleet's settings file naming "$CLAUDE_PROJECT_DIR"/… as
// its guard) and pins them, per workspace, to copies the agent cannot
// write.
type WorkspacePinner interface {
	// PinWorkspace pins the hook's scripts for the workspace root, once;
	// later calls for that root do nothing.
	PinWorkspace(root string)
}

// PinWorkspace pins, for the workspace root, the scripts of every hook
// that takes them from the workspace, whatever its event or matcher.
// Call it before a tool acts in the workspace: pinned at a hook's first
// run instead, a guard would be copied from what the agent's earlier
// calls, which the hook does not look at, wrote there.
func (r *Registry) PinWorkspace(root string) {
	if root == "" {
		return
	}
	for _, e := range r.entries {
		if p, ok := e.hook.(WorkspacePinner); ok {
			p.PinWorkspace(root)
		}
	}
}
