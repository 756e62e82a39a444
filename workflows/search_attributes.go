package workflows

import (
	"slices"

	"github.com/fenixrt/fenix/contract"
	"sync/atomic"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Search attributes Fenix sets on its runs so operators can filter them in
// the Web UI (all Keyword). They must be registered on the namespace; the
// worker registers missing ones at startup.
var (
	SearchAttrConversationID   = temporal.NewSearchAttributeKeyKeyword("ConversationId")
	SearchAttrTurnID           = temporal.NewSearchAttributeKeyKeyword("TurnId")
	SearchAttrToolName         = temporal.NewSearchAttributeKeyKeyword("ToolName")
	SearchAttrAssignmentStatus = temporal.NewSearchAttributeKeyKeyword("AssignmentStatus")
	// SearchAttrAwaitingDecision is AwaitingDecisionValue while a call of
	// the run waits for decide_permission, unset otherwise.
	SearchAttrAwaitingDecision = temporal.NewSearchAttributeKeyKeyword("AwaitingDecision")
)

// SearchAttributeKeys lists them, for registration.
func SearchAttributeKeys() []temporal.SearchAttributeKeyKeyword {
	return []temporal.SearchAttributeKeyKeyword{SearchAttrConversationID, SearchAttrTurnID, SearchAttrToolName, SearchAttrAssignmentStatus, SearchAttrAwaitingDecision}
}

var searchAttributesEnabled atomic.Bool

// EnableSearchAttributes tells new runs on this worker whether the
// namespace has Fenix's search attributes. Upserting an unregistered
// attribute fails the workflow task, so the worker sets this only after
// checking the namespace.
func EnableSearchAttributes(enabled bool) { searchAttributesEnabled.Store(enabled) }

// searchAttributesOn decides once per run, recorded in history, whether
// this run upserts search attributes.
func (s *session) searchAttributesOn() bool {
	var on bool
	enabled := workflow.SideEffect(s.ctx, func(workflow.Context) any { return searchAttributesEnabled.Load() })
	if err := enabled.Get(&on); err != nil {
		return false
	}
	return on
}

// upsert sets search attributes when this run uses them; a failure is
// logged, not fatal, because filtering is a convenience. Since the fast
// path the updates wait for the run's next yield to the server (a regular
// activity, a child workflow, a wait for a human) or its end: every upsert
// is a history event and a visibility write, and a call that completes in
// one workflow task needs only one.
func (s *session) upsert(updates ...attrUpdate) {
	if !s.searchAttrs {
		return
	}
	if s.shape < shapeFastPath {
		s.upsertNow(updates)
		return
	}
	for _, u := range updates {
		if i := slices.IndexFunc(s.pendingAttrs, func(p attrUpdate) bool { return p.key.GetName() == u.key.GetName() }); i >= 0 {
			s.pendingAttrs[i] = u
		} else {
			s.pendingAttrs = append(s.pendingAttrs, u)
		}
	}
}

// flushAttrs upserts the pending updates before the run yields. Since
// fenix-shape 11 it leaves out the values the run already has: a run
// started with StartAttributes (or continued as new, which keeps them)
// makes no upsert until its status changes.
func (s *session) flushAttrs() {
	pending := s.pendingAttrs
	s.pendingAttrs = nil
	if s.shape >= shapeStartAttributes {
		current := workflow.GetTypedSearchAttributes(s.ctx)
		pending = slices.DeleteFunc(pending, func(u attrUpdate) bool { return u.heldBy(current) })
	}
	if len(pending) > 0 {
		s.upsertNow(pending)
	}
}

// closeAttrs records the run's final status.
func (s *session) closeAttrs(status string) {
	s.upsert(setAttr(SearchAttrAssignmentStatus, status))
	s.flushAttrs()
}

func (s *session) upsertNow(updates []attrUpdate) {
	if err := workflow.UpsertTypedSearchAttributes(s.ctx, sdkUpdates(updates)...); err != nil {
		s.logger.Warn("upserting search attributes failed", "error", err)
	}
}

// attrUpdate is one search-attribute update with its key, so pending
// updates of the same key replace each other, and its value, so an update
// the run already holds can be left out.
type attrUpdate struct {
	key    temporal.SearchAttributeKeyKeyword
	value  string
	unset  bool
	update temporal.SearchAttributeUpdate
}

func setAttr(key temporal.SearchAttributeKeyKeyword, value string) attrUpdate {
	return attrUpdate{key: key, value: value, update: key.ValueSet(value)}
}

func unsetAttr(key temporal.SearchAttributeKeyKeyword) attrUpdate {
	return attrUpdate{key: key, unset: true, update: key.ValueUnset()}
}

// heldBy reports whether the run's search attributes already say what u
// would.
func (u attrUpdate) heldBy(current temporal.SearchAttributes) bool {
	value, ok := current.GetKeyword(u.key)
	if u.unset {
		return !ok
	}
	return ok && value == u.value
}

// startAttributes are the search attributes a run upserts first: its
// conversation, turn, running status and, for a tool call, the tool.
func startAttributes(conversationID, turnID, toolName string) []attrUpdate {
	updates := []attrUpdate{setAttr(SearchAttrConversationID, conversationID), setAttr(SearchAttrTurnID, turnID),
		setAttr(SearchAttrAssignmentStatus, AssignmentStatusRunning)}
	if toolName != "" {
		updates = append(updates, setAttr(SearchAttrToolName, toolName))
	}
	return updates
}

// AssignmentStatusRunning is AssignmentStatus while a run works.
const AssignmentStatusRunning = "running"

// StartAttributes are the search attributes a run for a (ExecuteAssignment,
// AgentTurn or PrepareRound) sets first. A starter that passes them in
// StartWorkflowOptions.TypedSearchAttributes saves the run that upsert
// (fenix-shape 11): one history event and one visibility write fewer per
// call. The namespace must have them registered (the worker does that at
// startup); StartWorkflow falls back to starting without them.
func StartAttributes(a contract.Assignment) temporal.SearchAttributes {
	toolName := ""
	if a.ToolCall != nil {
		toolName = a.ToolCall.ToolName
	}
	return temporal.NewSearchAttributes(sdkUpdates(startAttributes(a.ConversationID, a.TurnID, toolName))...)
}

func sdkUpdates(updates []attrUpdate) []temporal.SearchAttributeUpdate {
	out := make([]temporal.SearchAttributeUpdate, len(updates))
	for i, u := range updates {
		out[i] = u.update
	}
	return out
}
