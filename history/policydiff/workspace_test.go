package policydiff

import (
	"context"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/workspace"
)

// cwdRecorder remembers where PreToolUse hooks were asked to run.
type cwdRecorder struct {
	hooks.Base
	cwds []string
}

func (r *cwdRecorder) Name() string { return "cwd_recorder" }

func (r *cwdRecorder) PreToolUse(_ context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	r.cwds = append(r.cwds, ev.Session.Cwd)
	return hooks.Continue(), nil
}

// TestEvaluateChecksTheWorkspaceBeforeHooksRun: a recorded session whose
// workspace is outside this environment's bases is skipped, naming the
// setting, without running a hook anywhere (the worker allowed it, so the
// environment differs, not the policy); one inside runs its hooks in its
// root.
func TestEvaluateChecksTheWorkspaceBeforeHooksRun(t *testing.T) {
	rec := &cwdRecorder{}
	p := policyWith(t, rec)
	p.WorkspaceRoot = t.TempDir()
	call := Call{
		ToolCall:     contract.ToolCall{CallID: "c", ToolName: "calculator", Arguments: map[string]any{"expression": "1+1"}},
		AgentContext: contract.AgentContext{Profile: "main", AllowedToolNames: []string{"calculator"}},
		session:      hooks.Session{SessionID: "s", WorkspaceRoot: "/etc", Cwd: "/etc"},
	}
	v := p.Evaluate(context.Background(), call)
	if v.Outcome != OutcomeUndecided || !strings.Contains(v.Reason, workspace.BasesSetting) || !strings.Contains(v.Reason, "-workspace-bases") {
		t.Fatalf("verdict = %+v, want it skipped, naming %s and -workspace-bases", v, workspace.BasesSetting)
	}
	if Compare(Verdict{Outcome: OutcomeAllow}, v) != ChangeSkipped {
		t.Fatalf("a deployment check counted as a change")
	}
	if len(rec.cwds) != 0 {
		t.Fatalf("hooks ran in %v", rec.cwds)
	}

	call.session = hooks.Session{SessionID: "s"}
	if v := p.Evaluate(context.Background(), call); v.Outcome == OutcomeBlock {
		t.Fatalf("the default workspace is allowed: %+v", v)
	}
	if len(rec.cwds) != 1 || rec.cwds[0] != p.WorkspaceRoot {
		t.Fatalf("hooks ran in %v, want the default workspace %s", rec.cwds, p.WorkspaceRoot)
	}
}
