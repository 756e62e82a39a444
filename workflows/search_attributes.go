package workflows

import (
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
)

// SearchAttributeKeys lists them, for registration.
func SearchAttributeKeys() []temporal.SearchAttributeKeyKeyword {
	return []temporal.SearchAttributeKeyKeyword{SearchAttrConversationID, SearchAttrTurnID, SearchAttrToolName, SearchAttrAssignmentStatus}
}

// versionSearchAttributes gates the upserts: runs recorded before them
// replay without them.
const versionSearchAttributes = "search-attributes"

var searchAttributesEnabled atomic.Bool

// EnableSearchAttributes tells new runs on this worker whether the
// namespace has Fenix's search attributes. Upserting an unregistered
// attribute fails the workflow task, so the worker sets this only after
// checking the namespace.
func EnableSearchAttributes(enabled bool) { searchAttributesEnabled.Store(enabled) }

// searchAttributesOn decides once per run, recorded in history, whether
// this run upserts search attributes.
func (s *session) searchAttributesOn() bool {
	if workflow.GetVersion(s.ctx, versionSearchAttributes, workflow.DefaultVersion, 1) < 1 {
		return false
	}
	var on bool
	enabled := workflow.SideEffect(s.ctx, func(workflow.Context) any { return searchAttributesEnabled.Load() })
	if err := enabled.Get(&on); err != nil {
		return false
	}
	return on
}

// upsert sets search attributes when this run uses them; a failure is
// logged, not fatal, because filtering is a convenience.
func (s *session) upsert(updates ...temporal.SearchAttributeUpdate) {
	if !s.searchAttrs {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(s.ctx, updates...); err != nil {
		s.logger.Warn("upserting search attributes failed", "error", err)
	}
}
