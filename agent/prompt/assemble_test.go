package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/agent/compaction"
	"github.com/fenixrt/fenix/agent/prompt/operator"
	"github.com/fenixrt/fenix/agent/skills"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/workspace"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

type fakeSnapshotter struct {
	state  map[string]any
	err    error
	scopes []operator.Scope
}

func (f *fakeSnapshotter) Snapshot(_ context.Context, scope operator.Scope) (operator.Snapshot, error) {
	f.scopes = append(f.scopes, scope)
	if f.err != nil {
		return operator.Snapshot{}, f.err
	}
	return operator.Snapshot{Object: f.state, Path: ".fenix/sessions/" + scope.ConversationID + "/operator_state.json", Bytes: 42}, nil
}

func assignment() contract.Assignment {
	return contract.Assignment{
		LogicalWorkID:  "work-1",
		AttemptNo:      1,
		ConversationID: "conv-1",
		TurnID:         "turn-1",
		AgentContext:   contract.AgentContext{Profile: "main", AllowedToolNames: []string{"calculator", "workspace_read"}},
		ModelContext:   contract.ModelContext{LikelyModel: "gpt-test"},
		WorkspaceRoot:  os.TempDir(),
	}
}

// tempBases allows the system's temporary directory, where assignment()'s
// workspace root and the tests' directories are.
func tempBases(t *testing.T) *workspace.Bases {
	t.Helper()
	b, err := workspace.NewBases(workspace.BasesSetting, os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func profilesDir(t *testing.T) string {
	dir := t.TempDir()
	writeProfile(t, dir, "main", map[string]string{
		"AGENT.md":    "You are Fenix, file agent prompt.",
		"SOUL.md":     "file soul",
		"MEMORY.md":   "file memory",
		"OPERATOR.md": "file operator prompt",
	})
	writeProfile(t, dir, "researcher", map[string]string{"AGENT.md": "You research.", "OPERATOR.md": "researcher operator prompt"})
	return dir
}

func TestPrepareSectionSources(t *testing.T) {
	a := assignment()
	a.Prompts = contract.PromptSections{Soul: "inline soul", User: "inline user", ConversationSummary: "inline summary"}
	a.ContextImports = []map[string]any{{"kind": "note", "text": "imported"}}
	as := &Assembler{ProfilesDir: profilesDir(t)}
	p, err := as.Prepare(context.Background(), a, []contract.Message{{Role: "user", Content: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"agent_prompt": "file", "soul": "inline", "user": "inline", "memory": "file",
		"conversation_summary": "inline", "operator_prompt": "file", "context_imports": "inline",
	}
	if !reflect.DeepEqual(p.Trace.SectionSources, want) {
		t.Errorf("section_sources = %v, want %v", p.Trace.SectionSources, want)
	}
	system := p.Messages[0].Content
	for _, s := range []string{"Soul:\ninline soul", "Memory:\nfile memory", "User:\ninline user", "Agent Prompt:\nYou are Fenix"} {
		if !strings.Contains(system, s) {
			t.Errorf("system prompt lacks %q:\n%s", s, system)
		}
	}
	if strings.Contains(system, "file soul") {
		t.Errorf("the file soul was used although an inline soul was sent:\n%s", system)
	}
}

func TestPrepareOperatorLayer(t *testing.T) {
	tests := []struct {
		name        string
		profile     string
		subagent    bool
		inlineState map[string]any
		inlineOp    string
		injected    bool
		reason      string
		snapshots   int
		dropped     []string
		stateSource string
	}{
		{"main top-level gets the snapshot", "main", false, nil, "", true, "profile main", 1, nil, "snapshot"},
		{"empty profile means main", "", false, nil, "", true, "profile main", 1, nil, "snapshot"},
		{"inline state wins over the snapshot", "main", false, map[string]any{"inline": true}, "", true, "profile main", 0, nil, "inline"},
		{"main subagent gets nothing", "main", true, nil, "", false, "is_subagent is true", 0, nil, ""},
		{"subagent drops inline operator sections", "main", true, map[string]any{"x": 1}, "inline op", false, "subagent", 0, []string{"operator_prompt", "operator_state"}, ""},
		{"other profile gets nothing", "researcher", false, nil, "inline op", false, `profile "researcher" is not "main"`, 0, []string{"operator_prompt"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &fakeSnapshotter{state: map[string]any{"files": []any{"README.md"}}}
			a := assignment()
			a.AgentContext.Profile, a.AgentContext.IsSubagent = tt.profile, tt.subagent
			a.Prompts.OperatorState, a.Prompts.OperatorPrompt = tt.inlineState, tt.inlineOp
			as := &Assembler{ProfilesDir: profilesDir(t), Operator: snap, WorkspaceBases: tempBases(t)}
			p, err := as.Prepare(context.Background(), a, nil)
			if err != nil {
				t.Fatal(err)
			}
			system := ""
			if len(p.Messages) > 0 {
				system = p.Messages[0].Content
			}
			hasOp := strings.Contains(system, "Operator Prompt:") || strings.Contains(system, "Operator State:")
			if hasOp != tt.injected || p.Trace.OperatorLayer != tt.injected {
				t.Fatalf("operator sections present=%v trace=%v, want %v\n%s", hasOp, p.Trace.OperatorLayer, tt.injected, system)
			}
			if tt.injected && !strings.Contains(system, "Operator State:") {
				t.Fatalf("operator state missing:\n%s", system)
			}
			if !strings.Contains(p.Trace.OperatorLayerReason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", p.Trace.OperatorLayerReason, tt.reason)
			}
			if len(snap.scopes) != tt.snapshots {
				t.Errorf("snapshots taken = %d, want %d", len(snap.scopes), tt.snapshots)
			}
			if !reflect.DeepEqual(p.Trace.DroppedSections, tt.dropped) {
				t.Errorf("dropped = %v, want %v", p.Trace.DroppedSections, tt.dropped)
			}
			if got := p.Trace.SectionSources["operator_state"]; got != tt.stateSource {
				t.Errorf("operator_state source = %q, want %q", got, tt.stateSource)
			}
		})
	}
}

func TestPrepareOperatorStateProblemsAreNotFatal(t *testing.T) {
	w, def := t.TempDir(), t.TempDir()
	tests := []struct {
		name        string
		snap        *fakeSnapshotter
		workspace   string
		defaultRoot string
		wantErr     string
		wantRoot    string
	}{
		{"snapshot fails", &fakeSnapshotter{err: errors.New("disk full")}, w, "", "disk full", w},
		{"no workspace anywhere", &fakeSnapshotter{}, "", "", "no workspace_root", ""},
		{"worker default", &fakeSnapshotter{state: map[string]any{"ok": true}}, "", def, "", def},
		{"missing workspace", &fakeSnapshotter{}, filepath.Join(def, "missing"), def, "does not exist", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := assignment()
			a.WorkspaceRoot = tt.workspace
			as := &Assembler{Operator: tt.snap, DefaultWorkspaceRoot: tt.defaultRoot}
			if tt.defaultRoot == "" {
				as.WorkspaceBases = tempBases(t)
			}
			p, err := as.Prepare(context.Background(), a, []contract.Message{{Role: "user", Content: "x"}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && !strings.Contains(p.Trace.OperatorStateError, tt.wantErr) {
				t.Errorf("operator_state_error = %q, want %q", p.Trace.OperatorStateError, tt.wantErr)
			}
			if tt.wantRoot != "" && (len(tt.snap.scopes) != 1 || tt.snap.scopes[0].WorkspaceRoot != tt.wantRoot) {
				t.Errorf("snapshot scopes = %+v, want root %s", tt.snap.scopes, tt.wantRoot)
			}
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	as := &Assembler{Operator: &fakeSnapshotter{err: context.Canceled}, WorkspaceBases: tempBases(t)}
	if _, err := as.Prepare(ctx, assignment(), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled snapshot: err = %v, want context.Canceled", err)
	}
}

// TestPrepareRefusesWorkspaceOutsideBases: a root outside the bases fails
// the round with an authorization error naming the setting, and is never
// snapshotted (the snapshot lists files and writes operator_state.json).
func TestPrepareRefusesWorkspaceOutsideBases(t *testing.T) {
	for _, root := range []string{"/", "/etc"} {
		snap := &fakeSnapshotter{state: map[string]any{"ok": true}}
		a := assignment()
		a.WorkspaceRoot = root
		as := &Assembler{Operator: snap, DefaultWorkspaceRoot: t.TempDir()}
		_, err := as.Prepare(context.Background(), a, nil)
		fe := fenixerr.As(err)
		if err == nil || fe.Class != fenixerr.ClassAuthorization || fe.Code != workspace.CodeRootNotAllowed || !strings.Contains(err.Error(), workspace.BasesSetting) {
			t.Fatalf("root %s: err = %v, want an authorization error naming %s", root, err, workspace.BasesSetting)
		}
		if len(snap.scopes) != 0 {
			t.Errorf("root %s was snapshotted: %+v", root, snap.scopes)
		}
	}
}

func TestPrepareMessagesAndEstimates(t *testing.T) {
	transcript := []contract.Message{
		{Role: "user", Content: "run it"},
		{Role: "assistant", ToolCalls: []contract.ToolCall{{CallID: "c1", ToolName: "calculator"}}},
		{Role: "tool", ToolCallID: "c1", Content: "The calculator returned 4."},
	}
	t.Run("empty prompt has no system message", func(t *testing.T) {
		p, err := (&Assembler{}).Prepare(context.Background(), assignment(), transcript)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.Messages, transcript) {
			t.Fatalf("messages = %+v, want the transcript", p.Messages)
		}
		if p.EstimatedMessageCount != 3 || p.EstimatedTokenCount != (2+4)+(1+4)+(4+4) {
			t.Fatalf("estimates = %d messages, %d tokens", p.EstimatedMessageCount, p.EstimatedTokenCount)
		}
	})
	t.Run("prompt goes first", func(t *testing.T) {
		a := assignment()
		a.Prompts.AgentPrompt = "Be brief."
		p, err := (&Assembler{}).Prepare(context.Background(), a, transcript)
		if err != nil {
			t.Fatal(err)
		}
		want := append([]contract.Message{{Role: "system", Content: "Agent Prompt:\nBe brief."}}, transcript...)
		if !reflect.DeepEqual(p.Messages, want) {
			t.Fatalf("messages = %+v, want %+v", p.Messages, want)
		}
		if p.EstimatedMessageCount != 4 || p.EstimatedTokenCount != (compaction.WordEstimator{}).EstimateTokens(want) {
			t.Fatalf("estimates = %d messages, %d tokens", p.EstimatedMessageCount, p.EstimatedTokenCount)
		}
		if p.Trace.MessageCount != 3 {
			t.Fatalf("trace message_count = %d, want the transcript's 3", p.Trace.MessageCount)
		}
	})
}

func TestPrepareLikelyModel(t *testing.T) {
	tests := []struct {
		name string
		mc   contract.ModelContext
		pe   contract.ProviderExecution
		want string
	}{
		{"likely_model first", contract.ModelContext{LikelyModel: "a", ModelRef: "b", APIModel: "c"}, contract.ProviderExecution{ModelRef: "d"}, "a"},
		{"then model_ref", contract.ModelContext{ModelRef: "b", APIModel: "c"}, contract.ProviderExecution{ModelRef: "d"}, "b"},
		{"then api_model", contract.ModelContext{APIModel: "c"}, contract.ProviderExecution{ModelRef: "d"}, "c"},
		{"then provider_execution.model_ref", contract.ModelContext{}, contract.ProviderExecution{ModelRef: "d"}, "d"},
		{"none", contract.ModelContext{}, contract.ProviderExecution{}, ""},
	}
	for _, tt := range tests {
		a := assignment()
		a.ModelContext, a.ProviderExecution = tt.mc, tt.pe
		p, err := (&Assembler{}).Prepare(context.Background(), a, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.LikelyModel != tt.want || p.Trace.Model != tt.want {
			t.Errorf("%s: likely model = %q / trace %q, want %q", tt.name, p.LikelyModel, p.Trace.Model, tt.want)
		}
	}
}

func TestPrepareRejectsBadProfile(t *testing.T) {
	a := assignment()
	a.AgentContext.Profile = "../etc"
	if _, err := (&Assembler{ProfilesDir: t.TempDir()}).Prepare(context.Background(), a, nil); err == nil || !strings.Contains(err.Error(), `agent profile "../etc"`) {
		t.Fatalf("err = %v", err)
	}
}

func skillRoots(t *testing.T) skills.Roots {
	base := t.TempDir()
	roots := skills.Roots{System: filepath.Join(base, "system"), Installed: filepath.Join(base, "installed")}
	for _, s := range []struct{ root, name, desc, body string }{
		{roots.System, "deploy", "Deploy the service with the runbook.", "# Deploy\n\n1. Run `scripts/deploy.sh`.\n2. Check health."},
		{roots.System, "review", "Review a change for bugs.", "# Review\n\nRead the diff."},
		{roots.Installed, "notes", "Keep project notes.", "# Notes"},
	} {
		dir := filepath.Join(s.root, s.name)
		os.MkdirAll(filepath.Join(dir, "scripts"), 0o755)
		os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+s.name+"\ndescription: "+s.desc+"\n---\n"+s.body+"\n"), 0o644)
		if s.name == "deploy" {
			os.WriteFile(filepath.Join(dir, "scripts", "deploy.sh"), []byte("#!/bin/sh\n"), 0o755)
		}
	}
	return roots
}

func TestPrepareSkills(t *testing.T) {
	catalog, err := skills.Open(skillRoots(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := (&Assembler{Skills: catalog}).Prepare(context.Background(), assignment(), []contract.Message{
		{Role: "user", Content: "Use [$deploy](skills/deploy), then $deploy again and $ghost. Costs US$5."},
		{Role: "tool", Content: "page says $review"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tr := p.Trace
	if !reflect.DeepEqual(tr.SelectedSkills, []string{"deploy"}) || !reflect.DeepEqual(tr.UnknownSkillRefs, []string{"ghost"}) || tr.ActiveSkillCount != 3 {
		t.Fatalf("trace selected=%v unknown=%v active=%d", tr.SelectedSkills, tr.UnknownSkillRefs, tr.ActiveSkillCount)
	}
	system := p.Messages[0].Content
	for _, want := range []string{"Active Skills:\n- deploy: Deploy the service with the runbook.\n- notes: Keep project notes.\n- review:", "Skill deploy:\n---\nname: deploy", "Files of skill deploy: scripts/deploy.sh"} {
		if !strings.Contains(system, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, system)
		}
	}
	if strings.Contains(system, "Skill review:") {
		t.Error("a reference inside a tool result selected a skill")
	}
}

func TestPrepareTraceEntry(t *testing.T) {
	p, err := (&Assembler{}).Prepare(context.Background(), assignment(), []contract.Message{{Role: "user", Content: "a b"}})
	if err != nil {
		t.Fatal(err)
	}
	e := p.Trace.Entry()
	if e.Hook != "prepare_turn" || e.Get("model") != "gpt-test" || e.Get("profile") != "main" || e.Get("is_subagent") != false ||
		e.Get("message_count") != 1.0 || e.Get("estimated_token_count") != 6.0 || e.Get("operator_layer_injected") != true {
		t.Fatalf("entry = %+v", e)
	}
	if got := e.Get("allowed_tool_names"); !reflect.DeepEqual(got, []any{"calculator", "workspace_read"}) {
		t.Fatalf("allowed_tool_names = %v", got)
	}
}

func TestPrepareWithRealSnapshot(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("hi"), 0o644)
	a := assignment()
	a.WorkspaceRoot = ws
	p, err := (&Assembler{Operator: &operator.Snapshotter{}, WorkspaceBases: tempBases(t)}).Prepare(context.Background(), a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Trace.OperatorStatePath != ".fenix/sessions/conv-1/operator_state.json" || p.Trace.OperatorStateError != "" {
		t.Fatalf("trace = %+v", p.Trace)
	}
	if _, err := os.Stat(filepath.Join(ws, p.Trace.OperatorStatePath)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Messages[0].Content, "Operator State:\n{\n  \"files\": [\n    \"README.md\"\n  ]") {
		t.Fatalf("prompt:\n%s", p.Messages[0].Content)
	}
}

// TestGoldenPrompt pins the whole assembled prompt. Run with -update to
// rewrite testdata/assembled_prompt.golden after an intended change.
func TestGoldenPrompt(t *testing.T) {
	catalog, err := skills.Open(skillRoots(t))
	if err != nil {
		t.Fatal(err)
	}
	a := assignment()
	a.Prompts = contract.PromptSections{
		User:                "The user is Ana, a site reliability engineer. She prefers short answers.",
		ConversationSummary: "Ana asked to deploy version 1.4 of the billing service.",
	}
	a.ContextImports = []map[string]any{{"kind": "file", "path": "CHANGELOG.md", "excerpt": "1.4: faster invoices"}}
	as := &Assembler{
		Skills:         catalog,
		ProfilesDir:    profilesDir(t),
		WorkspaceBases: tempBases(t),
		Operator: &fakeSnapshotter{state: map[string]any{
			"workspace_root": "/workspace",
			"files":          []any{"CHANGELOG.md", "scripts/", "scripts/deploy.sh"},
			"command_runs":   []any{map[string]any{"id": "cr-1", "command": "make test", "status": "succeeded", "exit_status": 0}},
		}},
	}
	p, err := as.Prepare(context.Background(), a, []contract.Message{
		{Role: "user", Content: "Please [$deploy](skills/deploy) billing 1.4 and keep $notes."},
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(p.Messages[0].Content)
	b.WriteString("\n\n==== messages ====\n")
	msgs, _ := json.MarshalIndent(p.Messages[1:], "", "  ")
	b.Write(msgs)
	b.WriteString("\n==== trace ====\n")
	trace, _ := json.MarshalIndent(p.Trace, "", "  ")
	b.Write(trace)
	b.WriteString("\n")
	got := b.String()

	golden := filepath.Join("testdata", "assembled_prompt.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./prompt -run TestGoldenPrompt -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("assembled prompt differs from %s (rerun with -update if intended):\n--- got\n%s\n--- want\n%s", golden, got, want)
	}
}
