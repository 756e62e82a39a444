package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fenixrt/fenix/agent/compaction"
	"github.com/fenixrt/fenix/agent/prompt/operator"
	"github.com/fenixrt/fenix/agent/skills"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/workspace"
)

// TraceHook is the hook name of PrepareTurn's trace entry.
const TraceHook = "prepare_turn"

// MainProfile is the only profile that gets the operator layer.
const MainProfile = "main"

// Section sources reported in the trace.
const (
	SourceInline   = "inline"
	SourceFile     = "file"
	SourceSnapshot = "snapshot"
	SourceCatalog  = "catalog"
)

// SkillSelector picks the skills a round's messages refer to.
// *skills.Catalog implements it.
type SkillSelector interface {
	Select(messages []contract.Message) skills.Selection
}

// OperatorSnapshotter snapshots workspace state for the Operator State
// section. *operator.Snapshotter implements it.
type OperatorSnapshotter interface {
	Snapshot(ctx context.Context, scope operator.Scope) (operator.Snapshot, error)
}

// Assembler prepares a round's messages. Every dependency is optional: a
// nil Skills means no skill sections, an empty ProfilesDir means inline
// sections only, a nil Operator means Operator State only when inline.
type Assembler struct {
	Skills SkillSelector
	// ProfilesDir holds one directory per agent profile.
	ProfilesDir string
	// Estimator defaults to compaction.WordEstimator.
	Estimator compaction.Estimator
	Operator  OperatorSnapshotter
	// DefaultWorkspaceRoot is used when the assignment has no
	// workspace_root (the worker's FENIX_WORKSPACE_ROOT).
	DefaultWorkspaceRoot string
	// WorkspaceBases is the allow-list the workspace root must resolve
	// inside before it is snapshotted (FENIX_WORKSPACE_BASES); nil means
	// DefaultWorkspaceRoot alone.
	WorkspaceBases *workspace.Bases
	// Unread, when set, says why no model reads this preparation's
	// context: it then does no work that only that reader needs, work that
	// grows with the workspace. It takes no workspace snapshot (Operator
	// State is inline only) and loads no skill the transcript refers to
	// (the catalog's active skills, in memory, are still listed). The
	// reason is in the trace (context_unread).
	Unread string
	// ReadDenied is the permission rules' verdict on reading a workspace
	// path (hooks.PathFilter.ReadDenied), nil when no rule denies reads:
	// the workspace snapshot leaves out what it denies.
	ReadDenied func(root, rel string, resolve func(rel string) (string, error)) bool
}

// Prepared is PrepareTurn's result.
type Prepared struct {
	// Messages are [system prompt] + the normalized transcript; the
	// system message is left out when the prompt is empty.
	Messages              []contract.Message `json:"messages"`
	LikelyModel           string             `json:"likely_model"`
	EstimatedMessageCount int                `json:"estimated_message_count"`
	EstimatedTokenCount   int                `json:"estimated_token_count"`
	Trace                 PrepareTrace       `json:"trace"`
}

// PrepareTrace is what PrepareTurn observed.
type PrepareTrace struct {
	Model            string   `json:"model"`
	Profile          string   `json:"profile"`
	IsSubagent       bool     `json:"is_subagent"`
	AllowedToolNames []string `json:"allowed_tool_names"`
	// MessageCount is the transcript's length, before the system prompt.
	MessageCount           int               `json:"message_count"`
	EstimatedMessageCount  int               `json:"estimated_message_count"`
	EstimatedTokenCount    int               `json:"estimated_token_count"`
	Estimator              string            `json:"estimator"`
	ProfileDirFound        bool              `json:"profile_dir_found"`
	SectionSizes           []SectionSize     `json:"section_sizes"`
	SectionSources         map[string]string `json:"section_sources"`
	OperatorLayer          bool              `json:"operator_layer_injected"`
	OperatorLayerReason    string            `json:"operator_layer_reason"`
	OperatorStatePath      string            `json:"operator_state_path,omitempty"`
	OperatorStateBytes     int               `json:"operator_state_bytes,omitempty"`
	OperatorStateTruncated bool              `json:"operator_state_truncated,omitempty"`
	OperatorStateError     string            `json:"operator_state_error,omitempty"`
	ContextUnread          string            `json:"context_unread,omitempty"`
	// DroppedSections are inline sections left out because the operator
	// layer does not apply.
	DroppedSections  []string             `json:"dropped_sections,omitempty"`
	ActiveSkillCount int                  `json:"active_skill_count"`
	SelectedSkills   []string             `json:"selected_skills"`
	SkillReferences  []skills.Reference   `json:"skill_references,omitempty"`
	UnknownSkillRefs []string             `json:"unknown_skill_refs,omitempty"`
	FailedSkills     []skills.LoadFailure `json:"failed_skills,omitempty"`
}

// Entry is the trace entry for the workflow's trace.
func (t PrepareTrace) Entry() contract.TraceEntry {
	fields := map[string]any{}
	data, err := json.Marshal(t)
	if err == nil {
		err = json.Unmarshal(data, &fields)
	}
	if err != nil {
		fields = map[string]any{"trace_error": err.Error()}
	}
	return contract.TraceEntry{Hook: TraceHook, Fields: fields}
}

// Prepare assembles the round: it loads the profile, applies the
// inline-over-file rule, takes the operator snapshot when the operator
// layer applies, selects skills, builds the system prompt and estimates
// the result. Errors are returned for an invalid profile name or an
// unreadable profile file, and for cancellation; an unavailable operator
// snapshot or skill is reported in the trace instead.
func (as *Assembler) Prepare(ctx context.Context, a contract.Assignment, transcript []contract.Message) (Prepared, error) {
	est := as.Estimator
	if est == nil {
		est = compaction.WordEstimator{}
	}
	profile := a.AgentContext.Profile
	if profile == "" {
		profile = MainProfile
	}
	tr := PrepareTrace{
		Model:            a.InferModel(),
		Profile:          profile,
		IsSubagent:       a.AgentContext.IsSubagent,
		AllowedToolNames: append([]string{}, a.AgentContext.AllowedToolNames...),
		MessageCount:     len(transcript),
		Estimator:        est.Name(),
		SectionSources:   map[string]string{},
		SelectedSkills:   []string{},
		ContextUnread:    as.Unread,
	}
	messages := NormalizeTranscript(transcript)

	prof, err := LoadProfile(as.ProfilesDir, profile)
	if err != nil {
		return Prepared{}, err
	}
	tr.ProfileDirFound = prof.Dir != ""

	var s Sections
	pick := func(section, inline string, dst *string) {
		switch {
		case strings.TrimSpace(inline) != "":
			*dst = inline
			tr.SectionSources[section] = SourceInline
		case prof.Sections[section] != "":
			*dst = prof.Sections[section]
			tr.SectionSources[section] = SourceFile
		}
	}
	pick("agent_prompt", a.Prompts.AgentPrompt, &s.AgentPrompt)
	pick("soul", a.Prompts.Soul, &s.Soul)
	pick("user", a.Prompts.User, &s.User)
	pick("memory", a.Prompts.Memory, &s.Memory)
	pick("conversation_summary", a.Prompts.ConversationSummary, &s.ConversationSummary)

	tr.OperatorLayer, tr.OperatorLayerReason = operatorLayer(profile, a.AgentContext.IsSubagent)
	if tr.OperatorLayer {
		pick("operator_prompt", a.Prompts.OperatorPrompt, &s.OperatorPrompt)
		if err := as.operatorState(ctx, a, profile, &s, &tr); err != nil {
			return Prepared{}, err
		}
	} else {
		if strings.TrimSpace(a.Prompts.OperatorPrompt) != "" {
			tr.DroppedSections = append(tr.DroppedSections, "operator_prompt")
		}
		if len(a.Prompts.OperatorState) > 0 {
			tr.DroppedSections = append(tr.DroppedSections, "operator_state")
		}
	}

	as.addSkills(messages, &s, &tr)
	if len(a.ContextImports) > 0 {
		s.ContextImports = a.ContextImports
		tr.SectionSources["context_imports"] = SourceInline
	}

	system, sizes := Build(s)
	tr.SectionSizes = sizes
	if tr.SectionSizes == nil {
		tr.SectionSizes = []SectionSize{}
	}
	out := make([]contract.Message, 0, len(messages)+1)
	if system != "" {
		out = append(out, contract.Message{Role: contract.RoleSystem, Content: system})
	}
	out = append(out, messages...)

	tr.EstimatedMessageCount = compaction.EstimateMessages(out)
	tr.EstimatedTokenCount = est.EstimateTokens(out)
	return Prepared{
		Messages:              out,
		LikelyModel:           tr.Model,
		EstimatedMessageCount: tr.EstimatedMessageCount,
		EstimatedTokenCount:   tr.EstimatedTokenCount,
		Trace:                 tr,
	}, nil
}

// addSkills adds the catalog's active skills and those the transcript
// selects to the sections, and records the choice in the trace.
func (as *Assembler) addSkills(messages []contract.Message, s *Sections, tr *PrepareTrace) {
	if as.Skills == nil {
		return
	}
	var sel skills.Selection
	if as.Unread == "" {
		sel = as.Skills.Select(messages)
	} else {
		sel.Active = as.Skills.Select(nil).Active
	}
	tr.ActiveSkillCount = len(sel.Active)
	for _, e := range sel.Active {
		s.ActiveSkills = append(s.ActiveSkills, SkillSummary{Name: e.Name, Description: e.Description})
	}
	for _, p := range sel.Selected {
		s.SelectedSkills = append(s.SelectedSkills, SelectedSkill{Name: p.Name, SkillMD: p.SkillMD, Files: otherFiles(p)})
		tr.SelectedSkills = append(tr.SelectedSkills, p.Name)
	}
	tr.SkillReferences, tr.UnknownSkillRefs, tr.FailedSkills = sel.References, sel.Unknown, sel.Failed
	if len(s.ActiveSkills) > 0 {
		tr.SectionSources["active_skills"] = SourceCatalog
	}
	if len(s.SelectedSkills) > 0 {
		tr.SectionSources["selected_skills"] = SourceCatalog
	}
}

// operatorLayer applies the seed's rule: only the main, top-level agent
// gets the operator layer.
func operatorLayer(profile string, isSubagent bool) (bool, string) {
	switch {
	case isSubagent:
		return false, "is_subagent is true: subagents do not get the operator layer"
	case profile != MainProfile:
		return false, fmt.Sprintf("profile %q is not %q: only the main agent gets the operator layer", profile, MainProfile)
	}
	return true, "profile main, not a subagent"
}

// operatorState fills the Operator State section: inline wins, else a
// snapshot of the workspace when a snapshotter and a workspace are set.
func (as *Assembler) operatorState(ctx context.Context, a contract.Assignment, profile string, s *Sections, tr *PrepareTrace) error {
	if len(a.Prompts.OperatorState) > 0 {
		s.OperatorState = a.Prompts.OperatorState
		tr.SectionSources["operator_state"] = SourceInline
		return nil
	}
	if as.Operator == nil {
		return nil
	}
	if as.Unread != "" {
		return nil
	}
	root := a.WorkspaceRoot
	if root == "" {
		root = as.DefaultWorkspaceRoot
	}
	if root == "" {
		tr.OperatorStateError = "no workspace_root in the assignment and no default on the worker: operator state skipped"
		return nil
	}
	bases := as.WorkspaceBases
	if bases == nil {
		var err error
		if bases, err = workspace.DefaultBases(as.DefaultWorkspaceRoot); err != nil {
			return fenixerr.Runtime("workspace bases: %v", err)
		}
	}
	// Not allowed is fatal, unlike an unusable snapshot: the assignment
	// named a directory it may not use.
	root, _, err := bases.Resolve(root)
	if err != nil {
		if fe := fenixerr.As(err); fe.Code != workspace.CodeRootNotAllowed {
			tr.OperatorStateError = fe.Message
			return nil
		}
		return err
	}
	snap, err := as.Operator.Snapshot(ctx, operator.Scope{WorkspaceRoot: root, ConversationID: a.ConversationID, Profile: profile, ReadDenied: as.ReadDenied})
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if err != nil {
		tr.OperatorStateError = fenixerr.As(err).Message
		return nil
	}
	s.OperatorState = snap.Object
	tr.SectionSources["operator_state"] = SourceSnapshot
	tr.OperatorStatePath, tr.OperatorStateBytes, tr.OperatorStateTruncated = snap.Path, snap.Bytes, snap.State.Truncated
	return nil
}

// otherFiles lists a skill's files except SKILL.md, whose content is
// already in the prompt.
func otherFiles(p skills.Package) []string {
	var out []string
	for _, f := range p.Files {
		if f.Path != skills.ManifestFile {
			out = append(out, f.Path)
		}
	}
	if p.FilesTruncated {
		out = append(out, fmt.Sprintf("(more than %d files; list truncated)", skills.MaxListedFiles))
	}
	return out
}
