package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of an assignment's names and identifiers. Each is repeated in
// many places a run records (search attributes, every stage's input and
// trace entry, reports, hook sessions, the audit row), so an oversized one
// would end the run without a result: the server terminates a run whose
// search attribute is over its 2 KB per-value limit (ConversationId,
// TurnId, ToolName), and a megabyte-long call ID or profile repeated by
// the stages overflows the 4 MB gRPC message of a workflow task, which
// then fails forever.
const (
	// MaxIDBytes bounds an identifier or name: IDs, tool and profile
	// names, model names, modes. Six times it (every byte escaped as
	// \u00XX by the SDK's JSON) stays under the server's 2 KB limit of a
	// Keyword search attribute.
	MaxIDBytes = 256
	// MaxWorkflowIDBytes bounds a Temporal workflow ID the assignment
	// names (report_to.workflow_id, agent_context.parent_session_id): the
	// server's own default limit.
	MaxWorkflowIDBytes = 1000
	// MaxPathBytes bounds a path (workspace_root, skill paths): Linux's
	// PATH_MAX.
	MaxPathBytes = 4096
	// MaxAllowedToolNamesBytes bounds agent_context.allowed_tool_names as
	// a whole (names plus one byte each). Every stage of every call in a
	// step may carry the list, and up to 128 calls of a step start in one
	// workflow task: with regular stages, 1.5 MB of names and three calls
	// overflowed the workflow task's 4 MB gRPC message, and 64 KiB of names
	// with 128 calls did too; the task failed forever. 16 KiB is half of
	// what 128 calls were measured to carry, and some 400 names; a server's
	// tools are granted at once with mcp__<server>, every MCP tool with
	// mcp__*.
	MaxAllowedToolNamesBytes = 16 << 10
)

// boundedField is one string field of an assignment with its bound.
type boundedField struct {
	name string
	v    *string
	max  int
}

// boundedFields lists the assignment's bounded string fields, in a fixed
// order.
func (a *Assignment) boundedFields() []boundedField {
	f := []boundedField{
		{"logical_work_id", &a.LogicalWorkID, MaxIDBytes},
		{"conversation_id", &a.ConversationID, MaxIDBytes},
		{"turn_id", &a.TurnID, MaxIDBytes},
		{"mode", &a.Mode, MaxIDBytes},
		{"context_ref", &a.ContextRef, MaxIDBytes},
		{"agent_context.profile", &a.AgentContext.Profile, MaxIDBytes},
		{"agent_context.parent_session_id", &a.AgentContext.ParentSessionID, MaxWorkflowIDBytes},
		{"model_context.likely_model", &a.ModelContext.LikelyModel, MaxIDBytes},
		{"model_context.model_ref", &a.ModelContext.ModelRef, MaxIDBytes},
		{"model_context.api_model", &a.ModelContext.APIModel, MaxIDBytes},
		{"provider_execution.model_ref", &a.ProviderExecution.ModelRef, MaxIDBytes},
		{"workspace_root", &a.WorkspaceRoot, MaxPathBytes},
		{"compaction.strategy", &a.Compaction.Strategy, MaxIDBytes},
		{"compaction.summarizer", &a.Compaction.Summarizer, MaxIDBytes},
		{"execution.stages", &a.Execution.Stages, MaxIDBytes},
		{"execution.pure_stages", &a.Execution.PureStages, MaxIDBytes},
	}
	for i := range a.AgentContext.AllowedToolNames {
		f = append(f, boundedField{fmt.Sprintf("agent_context.allowed_tool_names[%d]", i), &a.AgentContext.AllowedToolNames[i], MaxIDBytes})
	}
	if c := a.ToolCall; c != nil {
		f = append(f, boundedField{"tool_call.call_id", &c.CallID, MaxIDBytes}, boundedField{"tool_call.tool_name", &c.ToolName, MaxIDBytes})
	}
	if s := a.SkillRequest; s != nil {
		f = append(f, boundedField{"skill_request.skill_name", &s.SkillName, MaxIDBytes},
			boundedField{"skill_request.relative_path", &s.RelativePath, MaxPathBytes},
			boundedField{"skill_request.source_path", &s.SourcePath, MaxPathBytes})
	}
	if r := a.ReportTo; r != nil {
		f = append(f, boundedField{"report_to.workflow_id", &r.WorkflowID, MaxWorkflowIDBytes},
			boundedField{"report_to.run_id", &r.RunID, MaxIDBytes},
			boundedField{"report_to.signal_name", &r.SignalName, MaxIDBytes})
	}
	return f
}

// BoundIdentifiers checks the assignment's identifiers, names and paths
// against their bounds (MaxIDBytes, MaxWorkflowIDBytes, MaxPathBytes). Each
// field over its bound is replaced by a short prefix saying how long it
// was, so the failure the run ends with (and every copy of the field on
// the way there) stays small, and the error names every such field and
// its size. It returns nil when every field is within its bound.
func (a *Assignment) BoundIdentifiers() error {
	return boundFields(a.boundedFields())
}

// BoundAllowedToolNames checks agent_context.allowed_tool_names as a whole
// against MaxAllowedToolNamesBytes. A list over it is emptied, so the
// failure the run ends with repeats none of it, and the error says how
// large it was. It returns nil when the list is within its bound.
func (a *Assignment) BoundAllowedToolNames() error {
	names := a.AgentContext.AllowedToolNames
	size := 0
	for _, n := range names {
		size += len(n) + 1
	}
	if size <= MaxAllowedToolNamesBytes {
		return nil
	}
	a.AgentContext.AllowedToolNames = nil
	return fmt.Errorf("assignment field(s) over their size limit: agent_context.allowed_tool_names is %d names of %d bytes (at most %d bytes): grant a server's tools with mcp__<server>, every MCP tool with mcp__*",
		len(names), size, MaxAllowedToolNamesBytes)
}

// BoundIdentifiers is Assignment.BoundIdentifiers plus the turn's model.
func (r *AgentTurnRequest) BoundIdentifiers() error {
	return boundFields(append(r.Assignment.boundedFields(), boundedField{"model", &r.Model, MaxIDBytes}))
}

// oversizedPrefixBytes is what is kept of an oversized field.
const oversizedPrefixBytes = 32

func boundFields(fields []boundedField) error {
	var over []string
	const listed = 8
	for _, f := range fields {
		if len(*f.v) <= f.max {
			continue
		}
		if len(over) < listed {
			over = append(over, fmt.Sprintf("%s is %d bytes (at most %d)", f.name, len(*f.v), f.max))
		} else if len(over) == listed {
			over = append(over, "…")
		}
		*f.v = oversizedPlaceholder(*f.v)
	}
	if len(over) == 0 {
		return nil
	}
	return fmt.Errorf("assignment field(s) over their size limit: %s; identifiers and names are at most %d bytes, workflow IDs %d, paths %d",
		strings.Join(over, ", "), MaxIDBytes, MaxWorkflowIDBytes, MaxPathBytes)
}

// oversizedPlaceholder is what stands for an oversized field: its first
// bytes (cut on a rune boundary, invalid UTF-8 replaced) and its length.
func oversizedPlaceholder(s string) string {
	cut := oversizedPrefixBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", strings.ToValidUTF8(s[:cut], "\uFFFD"), len(s))
}

// ChildID is the identifier a subagent's run takes from its parent's
// (logical_work_id, turn_id) and the call that spawned it: parent/callID,
// while that fits MaxIDBytes. Longer, it keeps as much of the parent's as
// fits before a digest of the whole, so nested subagents of a kernel
// whose identifiers are long still get valid, distinct and stable ones
// (the child of a parent of 250 bytes ended with InvalidAssignmentError).
func ChildID(parent, callID string) string {
	id := parent + "/" + callID
	if len(id) <= MaxIDBytes {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	digest := "/~" + hex.EncodeToString(sum[:12])
	keep := MaxIDBytes - len(digest)
	for keep > 0 && !utf8.RuneStart(id[keep]) {
		keep--
	}
	return id[:keep] + digest
}
