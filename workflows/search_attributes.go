package workflows

import (
	"slices"
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
		if i := slices.IndexFunc(s.pendingAttrs, func(p attrUpdate) bool { return p.key == u.key }); i >= 0 {
			s.pendingAttrs[i] = u
		} else {
			s.pendingAttrs = append(s.pendingAttrs, u)
		}
	}
}

// flushAttrs upserts the pending updates before the run yields.
func (s *session) flushAttrs() {
	if len(s.pendingAttrs) > 0 {
		s.upsertNow(s.pendingAttrs)
		s.pendingAttrs = nil
	}
}

// closeAttrs records the run's final status.
func (s *session) closeAttrs(status string) {
	s.upsert(setAttr(SearchAttrAssignmentStatus, status))
	s.flushAttrs()
}

func (s *session) upsertNow(updates []attrUpdate) {
	out := make([]temporal.SearchAttributeUpdate, len(updates))
	for i, u := range updates {
		out[i] = u.update
	}
	if err := workflow.UpsertTypedSearchAttributes(s.ctx, out...); err != nil {
		s.logger.Warn("upserting search attributes failed", "error", err)
	}
}

// attrUpdate is one search-attribute update with its key, so pending
// updates of the same key replace each other.
type attrUpdate struct {
	key    string
	update temporal.SearchAttributeUpdate
}

func setAttr(key temporal.SearchAttributeKeyKeyword, value string) attrUpdate {
	return attrUpdate{key: key.GetName(), update: key.ValueSet(value)}
}

func unsetAttr(key temporal.SearchAttributeKeyKeyword) attrUpdate {
	return attrUpdate{key: key.GetName(), update: key.ValueUnset()}
}
