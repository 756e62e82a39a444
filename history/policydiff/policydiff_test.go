package policydiff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fenixrt/fenix/history/runhistory"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
	"github.com/fenixrt/fenix/internal/harness/testtools"
)

// The replay-test corpus was recorded by a worker with testtools'
// PolicyHook: call IDs starting with block- are blocked, ask- asked,
// rewrite- rewritten.
const corpus = "../../workflows/testdata"

func loadCorpus(t testing.TB) (map[RunRef]*runhistory.Run, []RunRef) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpus, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("corpus: %v (%d files)", err, len(files))
	}
	runs := map[RunRef]*runhistory.Run{}
	var refs []RunRef
	for _, f := range files {
		events, err := runhistory.ReadJSONFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ref := RunRef{WorkflowID: filepath.Base(f), RunID: "run-" + filepath.Base(f)}
		run, err := runhistory.Parse(ref.WorkflowID, ref.RunID, events, nil)
		if err != nil {
			t.Fatal(err)
		}
		runs[ref] = run
		refs = append(refs, ref)
	}
	return runs, refs
}

func fetchFrom(runs map[RunRef]*runhistory.Run) Fetch {
	return func(_ context.Context, ref RunRef) (*runhistory.Run, error) {
		run, ok := runs[ref]
		if !ok {
			return nil, fmt.Errorf("no history for %s", ref.WorkflowID)
		}
		return run, nil
	}
}

// freezeHook blocks one tool.
type freezeHook struct {
	hooks.Base
	tool string
}

func (h freezeHook) Name() string { return "freeze-" + h.tool }

func (h freezeHook) PreToolUse(_ context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	if ev.ToolName == h.tool {
		return hooks.Block(h.tool + " is frozen"), nil
	}
	return hooks.Continue(), nil
}

// replayRecorder remembers what hooks were asked, to check is_replay.
type replayRecorder struct {
	hooks.Base
	mu     sync.Mutex
	events []hooks.PreToolUseEvent
}

func (*replayRecorder) Name() string { return "replay-recorder" }

func (r *replayRecorder) PreToolUse(_ context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return hooks.Continue(), nil
}

func policyWith(t testing.TB, hs ...hooks.AgentHook) *Policy {
	t.Helper()
	registry := hooks.NewRegistry()
	registry.Add(builtin.NewCancellationHook())
	for _, h := range hs {
		registry.Add(h)
	}
	tools, err := testtools.WithBuiltins(testtools.Sleep())
	if err != nil {
		t.Fatal(err)
	}
	return &Policy{Tools: tools, Hooks: registry}
}

func replayCorpus(t *testing.T, p *Policy) Report {
	t.Helper()
	runs, refs := loadCorpus(t)
	rep, err := Replay(context.Background(), p, refs, fetchFrom(runs), Options{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func changeOf(t *testing.T, rep Report, file, callID string) Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.WorkflowID == file && r.ToolCall.CallID == callID {
			return r
		}
	}
	t.Fatalf("no replayed call %s in %s", callID, file)
	return Result{}
}

func TestSamePolicyChangesNothing(t *testing.T) {
	recorder := &replayRecorder{}
	rep := replayCorpus(t, policyWith(t, testtools.PolicyHook{}, recorder))
	if rep.Summary.Changed() || len(rep.Changes()) != 0 {
		t.Fatalf("the recording policy changes verdicts: %+v", rep.Changes())
	}
	if rep.Summary.Replayed < 20 {
		t.Errorf("only %d calls replayed from the corpus", rep.Summary.Replayed)
	}
	// Verdicts of every kind were replayed, not just allows.
	kinds := map[Outcome]int{}
	for _, r := range rep.Results {
		kinds[r.Recorded.Outcome]++
	}
	if kinds[OutcomeAllow] == 0 || kinds[OutcomeBlock] == 0 || kinds[OutcomeAsk] == 0 {
		t.Errorf("recorded outcomes %v: want allows, blocks and asks", kinds)
	}
	if len(recorder.events) == 0 {
		t.Fatal("no PreToolUse hook ran")
	}
	for _, ev := range recorder.events {
		if !ev.IsReplay {
			t.Errorf("hook saw %s/%s without is_replay", ev.SessionID, ev.CallID)
		}
	}
}

func TestCandidatePolicyDiff(t *testing.T) {
	// Policy B: no test policy (nothing blocked or asked by call ID), and
	// calculator frozen.
	rep := replayCorpus(t, policyWith(t, freezeHook{tool: "calculator"}))
	tests := []struct {
		file, call string
		want       Change
		from, to   Outcome
	}{
		{"governed_blocked.json", "block-1", ChangeUnchanged, OutcomeBlock, OutcomeBlock},
		{"governed_permission_allowed.json", "ask-1", ChangeNewlyBlocked, OutcomeAsk, OutcomeBlock},
		{"governed_calculator.json", "rewrite-1", ChangeNewlyBlocked, OutcomeAllow, OutcomeBlock},
		{"governed_exec_command.json", "exec-1", ChangeUnchanged, OutcomeAllow, OutcomeAllow},
		{"local_pure_stages_calculator.json", "call-1", ChangeNewlyBlocked, OutcomeAllow, OutcomeBlock},
		{"local_pure_stages_not_visible.json", "c", ChangeUnchanged, OutcomeBlock, OutcomeBlock},
	}
	for _, tc := range tests {
		got := changeOf(t, rep, tc.file, tc.call)
		if got.Change != tc.want || got.Recorded.Outcome != tc.from || got.Candidate.Outcome != tc.to {
			t.Errorf("%s %s: %s (%s → %s), want %s (%s → %s)", tc.file, tc.call, got.Change, got.Recorded.Outcome, got.Candidate.Outcome, tc.want, tc.from, tc.to)
		}
	}
	if perm := changeOf(t, rep, "governed_permission_allowed.json", "ask-1"); perm.HumanDecision != "allow" {
		t.Errorf("the recorded ask was approved by decide_permission; got human decision %q", perm.HumanDecision)
	}
	if timeout := changeOf(t, rep, "governed_permission_timeout.json", "ask-2"); timeout.HumanDecision != "deny (timeout)" {
		t.Errorf("the recorded ask timed out; got human decision %q", timeout.HumanDecision)
	}
	s := rep.Summary
	if s.Replayed != s.NewlyBlocked+s.NewlyAllowed+s.InputChanged+s.Unchanged || !s.Changed() {
		t.Errorf("summary does not add up: %+v", s)
	}
}

func TestCandidateAllowListAndRewrites(t *testing.T) {
	p := policyWith(t) // the test policy's rewrite is gone too
	p.AllowedTools = []string{"calculator", "workspace_read", "test_sleep"}
	rep := replayCorpus(t, p)
	tests := []struct {
		file, call string
		want       Change
	}{
		// Review rejected workspace_read; the candidate allow-list has it.
		{"local_pure_stages_not_visible.json", "c", ChangeNewlyAllowed},
		{"execute_assignment_tool_not_visible.json", "c", ChangeNewlyAllowed},
		// exec_command is no longer allowed.
		{"governed_exec_command.json", "exec-1", ChangeNewlyBlocked},
		// Allowed both times, but nothing rewrites the expression now.
		{"governed_calculator.json", "rewrite-1", ChangeInputChanged},
		{"governed_blocked.json", "block-1", ChangeNewlyAllowed},
	}
	for _, tc := range tests {
		if got := changeOf(t, rep, tc.file, tc.call); got.Change != tc.want {
			t.Errorf("%s %s: %s (%s → %s), want %s", tc.file, tc.call, got.Change, got.Recorded, got.Candidate, tc.want)
		}
	}
	exec := changeOf(t, rep, "governed_exec_command.json", "exec-1")
	if exec.Candidate.Stage != StageReview || exec.Candidate.DecidedBy != "ToolNotVisibleError" {
		t.Errorf("exec_command candidate verdict = %+v, want a review rejection", exec.Candidate)
	}
	if want := p.Hooks.PolicyFingerprint(p.AllowedTools); exec.Candidate.PolicyFingerprint != want {
		t.Errorf("candidate fingerprint %q, want the candidate policy's %q", exec.Candidate.PolicyFingerprint, want)
	}
}

func TestVerdictRules(t *testing.T) {
	ask := &hooks.PreToolUseResult{Action: hooks.RequirePermission("deploy", "exec_command"),
		PermissionRequired: &hooks.PermissionRequirement{Permission: "deploy", ToolName: "exec_command", Hook: "guard"}}
	settled := func(kind hooks.Kind) *hooks.PermissionRequestResult {
		return &hooks.PermissionRequestResult{Decision: hooks.PermissionDecision{Kind: kind, Reason: "on call"}, DecidedBy: "pager"}
	}
	tests := []struct {
		name string
		in   stageVerdicts
		want Outcome
	}{
		{"review passed, no hooks recorded yet", stageVerdicts{reviewed: true}, OutcomeUndecided},
		{"review passed before lifecycle hooks existed", stageVerdicts{reviewed: true, hooksOff: true}, OutcomeAllow},
		{"ask, unsettled", stageVerdicts{reviewed: true, pre: ask}, OutcomeAsk},
		{"ask, a hook allowed", stageVerdicts{reviewed: true, pre: ask, permission: settled(hooks.KindAllow)}, OutcomeAllow},
		{"ask, a hook denied", stageVerdicts{reviewed: true, pre: ask, permission: settled(hooks.KindDeny)}, OutcomeBlock},
		{"ask, no hook had an opinion", stageVerdicts{reviewed: true, pre: ask, permission: &hooks.PermissionRequestResult{Decision: hooks.NoOpinion()}}, OutcomeAsk},
	}
	for _, tc := range tests {
		if got := tc.in.verdict().Outcome; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}

	compare := []struct {
		recorded, candidate Verdict
		want                Change
	}{
		{Verdict{Outcome: OutcomeAllow}, Verdict{Outcome: OutcomeAsk}, ChangeNewlyBlocked},
		{Verdict{Outcome: OutcomeAsk}, Verdict{Outcome: OutcomeBlock}, ChangeNewlyBlocked},
		{Verdict{Outcome: OutcomeBlock}, Verdict{Outcome: OutcomeAsk}, ChangeNewlyAllowed},
		{Verdict{Outcome: OutcomeBlock, DecidedBy: "a"}, Verdict{Outcome: OutcomeBlock, DecidedBy: "b"}, ChangeUnchanged},
		{Verdict{Outcome: OutcomeAllow, UpdatedInput: map[string]any{"n": 1.0}}, Verdict{Outcome: OutcomeAllow, UpdatedInput: map[string]any{"n": 2.0}}, ChangeInputChanged},
		{Verdict{Outcome: OutcomeUndecided}, Verdict{Outcome: OutcomeBlock}, ChangeSkipped},
	}
	for _, tc := range compare {
		if got := Compare(tc.recorded, tc.candidate); got != tc.want {
			t.Errorf("Compare(%s, %s) = %s, want %s", tc.recorded, tc.candidate, got, tc.want)
		}
	}
}

func TestRender(t *testing.T) {
	rep := replayCorpus(t, policyWith(t, freezeHook{tool: "calculator"}))
	link := func(id, run string) string { return "ui/" + id + "/" + run }
	var text bytes.Buffer
	if err := WriteText(&text, rep, link, true); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; last != rep.Summary.Line() || !strings.HasPrefix(last, fmt.Sprintf("%d calls replayed, %d newly blocked, %d newly allowed", rep.Summary.Replayed, rep.Summary.NewlyBlocked, rep.Summary.NewlyAllowed)) {
		t.Errorf("last line %q is not the summary", last)
	}
	row := ""
	for _, l := range lines {
		if strings.Contains(l, "governed_permission_allowed.json") {
			row = strings.Join(strings.Fields(l), " ")
		}
	}
	wantRow := `ask → block governed_permission_allowed.json - ask-1 calculator ask: hook "test_policy" (test_approval), then allow unrecorded block: hook "freeze-calculator": calculator is frozen`
	if !strings.HasPrefix(row, wantRow) || !strings.Contains(out, `block: hook "freeze-calculator": calculator is frozen`) ||
		!strings.Contains(out, "ui/governed_permission_allowed.json/run-governed_permission_allowed.json") {
		t.Errorf("table lacks the ask-1 row, the candidate verdict or the link:\n%s", out)
	}

	var js bytes.Buffer
	if err := WriteJSON(&js, rep, link); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Changes []jsonChange `json:"changes"`
		Summary Summary      `json:"summary"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	if len(decoded.Changes) != len(rep.Changes()) || decoded.Summary.Replayed != rep.Summary.Replayed {
		t.Errorf("JSON has %d changes and %d replayed, want %d and %d", len(decoded.Changes), decoded.Summary.Replayed, len(rep.Changes()), rep.Summary.Replayed)
	}
}

// TestNarrowTableFitsIn120Columns: the default table cuts every cell, so
// long workflow IDs, call IDs and reasons keep each line within MaxWidth.
func TestNarrowTableFitsIn120Columns(t *testing.T) {
	rep := replayCorpus(t, policyWith(t, freezeHook{tool: "calculator"}))
	long := strings.Repeat("x", 200)
	r := rep.Changes()[0]
	r.WorkflowID, r.ToolCall.CallID, r.Recorded.Reason = "wf-"+long, "call-"+long, long
	r.Candidate = Verdict{Outcome: OutcomeBlock, Stage: StagePreToolUse, DecidedBy: long, Reason: long}
	rep.Results = append(rep.Results, r)
	rep.Summary.Skips = map[string]int{"the recorded workspace cannot be used here: " + long: 2}
	var narrow, wide bytes.Buffer
	link := func(id, run string) string {
		return "http://localhost:8233/namespaces/default/workflows/" + id + "/" + run + "/history"
	}
	if err := WriteText(&narrow, rep, link, false); err != nil {
		t.Fatal(err)
	}
	// The table and the skip reasons; the policy counts below list
	// fingerprints, one per policy.
	for _, line := range strings.Split(narrow.String(), "\n") {
		if strings.Contains(line, "verdicts by policy") {
			continue
		}
		if n := len([]rune(line)); n > MaxWidth {
			t.Errorf("line of %d columns:\n%s", n, line)
		}
	}
	if !strings.Contains(narrow.String(), "-wide") || !strings.Contains(narrow.String(), "2 × the recorded workspace cannot be used here") {
		t.Errorf("narrow output lacks the -wide hint or the skip reason:\n%s", narrow.String())
	}
	if err := WriteText(&wide, rep, link, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(wide.String(), long) || !strings.Contains(wide.String(), "RECORDED POLICY") || !strings.Contains(wide.String(), "/history") {
		t.Errorf("-wide output cut a reason or lacks the policy and link columns")
	}
}

// TestSamePolicyNeverChanges: a different verdict under the very policy
// that recorded the call (same fingerprint) is this environment's doing:
// skipped with the reason, not reported as a change.
func TestSamePolicyNeverChanges(t *testing.T) {
	r := Result{Call: Call{Recorded: Verdict{Outcome: OutcomeAllow, PolicyFingerprint: "fp1"}},
		Candidate: Verdict{Outcome: OutcomeBlock, Stage: StagePreToolUse, DecidedBy: "guard", PolicyFingerprint: "fp1"}}
	r.Change = Compare(r.Recorded, r.Candidate)
	if reason := skipReason(&r); r.Change != ChangeSkipped || !strings.Contains(reason, "fingerprint fp1") {
		t.Fatalf("change %s, reason %q; want skipped naming the fingerprint", r.Change, reason)
	}
	r.Candidate.PolicyFingerprint, r.Change = "fp2", ChangeNewlyBlocked
	if reason := skipReason(&r); r.Change != ChangeNewlyBlocked || reason != "" {
		t.Fatalf("another policy: change %s, reason %q; want newly blocked", r.Change, reason)
	}
}

func TestReplayNamesTheRunItCannotRead(t *testing.T) {
	_, err := Replay(context.Background(), policyWith(t), []RunRef{{WorkflowID: "gone", RunID: "r"}}, fetchFrom(nil), Options{})
	if err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("err = %v, want one naming the run", err)
	}
}

// The table prints what the recorded run held: call IDs and tool names
// the model chose, reasons a hook echoed from the agent's arguments. A
// terminal escape or a line break in them is shown escaped, so it can
// neither drive the operator's terminal nor add rows of its own.
func TestTableEscapesControlCharacters(t *testing.T) {
	rep := replayCorpus(t, policyWith(t, freezeHook{tool: "calculator"}))
	r := rep.Changes()[0]
	r.ToolCall.CallID = "call\x1b]0;pwned\x07"
	r.Candidate = Verdict{Outcome: OutcomeBlock, Stage: StagePreToolUse, DecidedBy: "h", Reason: "ok\nallow → allow  forged-row"}
	rep.Results = []Result{r}
	rep.Summary.Skips = map[string]int{"skip\x1b[2J": 1}
	for _, wide := range []bool{false, true} {
		var out bytes.Buffer
		if err := WriteText(&out, rep, func(id, run string) string { return id }, wide); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(out.String(), "\x1b\x07") || strings.Contains(out.String(), "\nallow → allow") || !strings.Contains(out.String(), `call\u001b]0;pwned\u0007`) {
			t.Errorf("wide=%v: control characters reach the terminal:\n%q", wide, out.String())
		}
	}
}
