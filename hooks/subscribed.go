package hooks

// WorkflowChecked is implemented by hooks whose whole decision the
// workflow already makes itself between stages (the cancellation guard):
// a stage with only such hooks has nothing to do.
type WorkflowChecked interface {
	CheckedByWorkflow() bool
}

// ToolScoped is implemented by hooks that can tell, from the tool name
// alone, that they never act on a tool event for that tool (a Claude Code
// matcher that does not match it). Answering true is always safe.
type ToolScoped interface {
	ConcernsTool(tool string) bool
}

// toolEvents are the events whose subscribers a ToolScoped hook narrows.
var toolEvents = map[Event]bool{
	EventPreToolUse: true, EventPostToolUse: true, EventPostToolUseFailure: true,
	EventPermissionRequest: true, EventPermissionDenied: true,
}

// ModeOnlyPolicy is a PermissionPolicy that decides nothing but in some
// session permission modes (a worker without permission rules, which
// applies only the mode the kernel names): in the others the PreToolUse
// stage need not run for it.
type ModeOnlyPolicy interface {
	ActsInMode(mode string) bool
}

// Subscribed returns the events of evs, in order, that some hook would
// act on for a call of tool in a session of permission mode mode (""
// for the default): a hook that handles the event, is not
// WorkflowChecked, and (for tool events) concerns the tool. The workflow
// skips the stage of every other event, so an event with no hook costs no
// history. Session events ignore tool.
func (r *Registry) Subscribed(mode, tool string, evs ...Event) []Event {
	return r.subscribed(mode, tool, nil, evs)
}

// subscribed is Subscribed without the hooks ignore says do not act on ev.
func (r *Registry) subscribed(mode, tool string, ignore func(AgentHook, Event) bool, evs []Event) []Event {
	out := []Event{}
	for _, ev := range evs {
		// Permission rules are decided in the PreToolUse stage, after its
		// hooks: with rules loaded the stage must run even without hooks,
		// and with a policy of modes only, in a mode it acts in.
		if ev == EventPreToolUse && r.permissions != nil {
			if m, ok := r.permissions.(ModeOnlyPolicy); !ok || m.ActsInMode(mode) {
				out = append(out, ev)
				continue
			}
		}
		for _, e := range r.subscribers(ev) {
			if c, ok := e.hook.(WorkflowChecked); ok && c.CheckedByWorkflow() {
				continue
			}
			if s, ok := e.hook.(ToolScoped); ok && toolEvents[ev] && !s.ConcernsTool(tool) {
				continue
			}
			if ignore != nil && ignore(e.hook, ev) {
				continue
			}
			out = append(out, ev)
			break
		}
	}
	return out
}
