package worker

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/fenixrt/fenix/agent/prompt/operator"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/tools/browser"
	"github.com/fenixrt/fenix/workflows"
)

func TestBrowserSessionEndClosesTurnAndCanceledRunSessions(t *testing.T) {
	if _, err := browser.FindChromium(); err != nil {
		t.Skipf("needs Chromium: %v", err)
	}
	host, err := tools.NewHost(tools.HostConfig{ID: "hook-host", DataDir: t.TempDir(), ProxyAddr: "off",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	reg := tools.Builtin()
	open := func(conv, run string) string {
		t.Helper()
		raw, err := reg.Execute(context.Background(), &tools.Env{CallID: "c", ConversationID: conv, RunID: run, Host: host},
			contract.ToolCall{ToolName: "browser_open", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			ID string `json:"browser_session_id"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	openIDs := func() []string {
		var ids []string
		for _, s := range host.BrowserSessions() {
			ids = append(ids, s.ID)
		}
		slices.Sort(ids)
		return ids
	}
	byAssignment := open("conv-a", workflows.AssignmentWorkflowID("w1", 1))
	byTurn := open("conv-a", workflows.AgentTurnWorkflowID("conv-a", "t1"))
	otherConv := open("conv-b", workflows.AssignmentWorkflowID("w2", 1))
	canceledRun := workflows.AssignmentWorkflowID("w3", 1)
	byCanceled := open("conv-c", canceledRun)

	snap := browserSessionLister(host)
	listed, err := snap.ListBrowserSessions(context.Background(), operator.Scope{ConversationID: "conv-a"})
	if err != nil || len(listed) != 2 || listed[0].StartedAt.IsZero() {
		t.Fatalf("operator snapshot of conv-a lists %+v, %v; want its two sessions with their start time", listed, err)
	}

	hook := browserSessionEnd{host: host}
	stop := func(session hooks.Session, reason string) {
		if err := hook.OnSessionStop(context.Background(), hooks.SessionStopEvent{Session: session, StopReason: reason}); err != nil {
			t.Fatal(err)
		}
	}
	// A completed single-call run leaves the conversation's sessions open.
	stop(hooks.Session{SessionID: workflows.AssignmentWorkflowID("w1", 1), ConversationID: "conv-a", TurnID: "t1"}, hooks.StopCompleted)
	if got := len(openIDs()); got != 4 {
		t.Fatalf("after an assignment completed, %d sessions are open, want 4", got)
	}
	// A subagent's stop does not end its parent's conversation.
	stop(hooks.Session{SessionID: workflows.AgentTurnWorkflowID("conv-a", "t1"), ConversationID: "conv-a", TurnID: "t1", IsSubagent: true}, hooks.StopCompleted)
	// The top-level agent turn's stop closes every session of conv-a.
	stop(hooks.Session{SessionID: workflows.AgentTurnWorkflowID("conv-a", "t1"), ConversationID: "conv-a", TurnID: "t1"}, hooks.StopCompleted)
	want := []string{otherConv, byCanceled}
	slices.Sort(want)
	if got := openIDs(); !slices.Equal(got, want) {
		t.Fatalf("after conv-a's turn ended, open sessions are %v, want %v (closed %s, %s)", got, want, byAssignment, byTurn)
	}
	// A canceled run closes what it opened.
	stop(hooks.Session{SessionID: canceledRun, ConversationID: "conv-c"}, hooks.StopCanceled)
	if got := openIDs(); !slices.Equal(got, []string{otherConv}) {
		t.Fatalf("after the canceled run, open sessions are %v, want [%s]", got, otherConv)
	}
}
