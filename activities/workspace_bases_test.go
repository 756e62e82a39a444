package activities

import (
	"context"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workspace"
)

// sessionRecorder remembers the sessions hooks were called with.
type sessionRecorder struct {
	hooks.Base
	sessions []hooks.Session
}

func (r *sessionRecorder) Name() string { return "recorder" }

func (r *sessionRecorder) OnSessionStart(_ context.Context, ev hooks.SessionStartEvent) error {
	r.sessions = append(r.sessions, ev.Session)
	return nil
}

func (r *sessionRecorder) PreToolUse(_ context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	r.sessions = append(r.sessions, ev.Session)
	return hooks.Continue(), nil
}

func requireRootNotAllowed(t *testing.T, what string, err error) {
	t.Helper()
	fe := fenixerr.FromTemporal(err)
	if err == nil || fe.Code != workspace.CodeRootNotAllowed || fe.Class != fenixerr.ClassAuthorization {
		t.Fatalf("%s: err = %v, want an authorization error with code %s", what, err, workspace.CodeRootNotAllowed)
	}
}

// TestWorkspaceRootOutsideBasesReachesNoHookAndNoTool: every stage that
// uses a workspace root checks it first; hooks are not called with a cwd
// outside the bases and tools never open it.
func TestWorkspaceRootOutsideBasesReachesNoHookAndNoTool(t *testing.T) {
	ctx := context.Background()
	recorder := &sessionRecorder{}
	registry := hooks.NewRegistry()
	registry.Add(recorder)
	a := &Activities{Tools: tools.Builtin(), DefaultWorkspaceRoot: t.TempDir(), Hooks: registry}
	bad := hooks.Session{SessionID: "s", WorkspaceRoot: "/"}

	_, err := a.RunLifecycleHooks(ctx, LifecycleHooksInput{SessionStart: &hooks.SessionStartEvent{Session: bad}})
	requireRootNotAllowed(t, "SessionStart", err)
	_, err = a.RunPreToolUseHooks(ctx, hooks.PreToolUseEvent{Session: bad, ToolName: "workspace_read"})
	requireRootNotAllowed(t, "PreToolUse", err)
	cwdOutside := hooks.Session{SessionID: "s", Cwd: "/etc"}
	_, err = a.RunPreToolUseHooks(ctx, hooks.PreToolUseEvent{Session: cwdOutside, ToolName: "workspace_read"})
	requireRootNotAllowed(t, "PreToolUse with a cwd outside", err)
	if len(recorder.sessions) != 0 {
		t.Fatalf("hooks ran with a workspace outside the bases: %+v", recorder.sessions)
	}

	_, err = a.ExecuteTool(ctx, ExecuteToolInput{WorkspaceRoot: "/", ToolCall: contract.ToolCall{
		CallID: "c", ToolName: "workspace_read", Arguments: map[string]any{"path": "etc/passwd"}}})
	requireRootNotAllowed(t, "ExecuteTool", err)

	// The default root is allowed and is what hooks see when the
	// assignment names none.
	_, err = a.RunPreToolUseHooks(ctx, hooks.PreToolUseEvent{Session: hooks.Session{SessionID: "s"}, ToolName: "calculator"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recorder.sessions) != 1 || recorder.sessions[0].Cwd != a.DefaultWorkspaceRoot || recorder.sessions[0].WorkspaceRoot != a.DefaultWorkspaceRoot {
		t.Fatalf("hook sessions = %+v, want the default root %s as workspace and cwd", recorder.sessions, a.DefaultWorkspaceRoot)
	}
}
