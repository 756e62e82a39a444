package worker

import (
	"context"

	"github.com/fenixrt/fenix/agent/prompt/operator"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/tools/browser"
	"github.com/fenixrt/fenix/workflows"
)

// browserSessionEnd closes browser sessions when their session ends.
// Fenix has no conversation-end signal (SessionStop fires when a run
// ends, and a kernel runs each tool call of a conversation as its own
// ExecuteAssignment run), so:
//
//   - the SessionStop of a conversation's top-level agent turn closes the
//     conversation's sessions on this host: the agent's turn is over;
//   - the SessionStop of any canceled run closes the sessions that run
//     opened;
//   - sessions opened by single tool-call runs otherwise stay open for the
//     conversation's next call, until browser_close, the idle timeout or
//     worker shutdown.
//
// SessionStop hooks run on the worker that runs the workflow; sessions on
// other hosts end by their idle timeout.
type browserSessionEnd struct {
	hooks.Base
	host *tools.Host
}

func (browserSessionEnd) Name() string { return "browser_session_end" }

func (browserSessionEnd) HandlesEvent(ev hooks.Event) bool { return ev == hooks.EventSessionStop }

func (h browserSessionEnd) OnSessionStop(_ context.Context, ev hooks.SessionStopEvent) error {
	turnEnded := !ev.IsSubagent && ev.ConversationID != "" && ev.TurnID != "" &&
		ev.SessionID == workflows.AgentTurnWorkflowID(ev.ConversationID, ev.TurnID)
	canceled := ev.StopReason == hooks.StopCanceled
	if h.host == nil || (!turnEnded && !canceled) {
		return nil
	}
	h.host.CloseBrowserSessions(func(s browser.Info) bool {
		return (turnEnded && s.ConversationID == ev.ConversationID) || (canceled && s.RunID == ev.SessionID)
	}, browser.ReasonSessionEnd)
	return nil
}

// browserSessionLister lists this host's open browser sessions of the
// snapshot's conversation (and those opened outside any conversation).
func browserSessionLister(host *tools.Host) operator.BrowserSessionLister {
	return operator.BrowserSessionListerFunc(func(_ context.Context, scope operator.Scope) ([]operator.BrowserSession, error) {
		var out []operator.BrowserSession
		for _, s := range host.BrowserSessions() {
			if s.ConversationID == "" || s.ConversationID == scope.ConversationID {
				out = append(out, operator.BrowserSession{ID: s.ID, URL: s.URL, Title: s.Title, Status: s.Status, StartedAt: s.StartedAt})
			}
		}
		return out, nil
	})
}
