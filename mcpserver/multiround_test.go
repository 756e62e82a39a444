package mcpserver

import "testing"

// A request state goes on with its call only for the session and tool it
// was given to, and once.
func TestARequestStateAnswersItsOwnCallOnce(t *testing.T) {
	l := newInputLedger()
	state := l.put(pendingInput{session: "s1", tool: "workspace_list", workflowID: "wf"})
	if _, ok := l.take(state, "s2", "workspace_list"); ok {
		t.Error("another session took the state")
	}
	if _, ok := l.take(state, "s1", "exec_command"); ok {
		t.Error("another tool took the state")
	}
	if in, ok := l.take(state, "s1", "workspace_list"); !ok || in.workflowID != "wf" {
		t.Errorf("take = %+v, %v; want the call's run", in, ok)
	}
	if _, ok := l.take(state, "s1", "workspace_list"); ok {
		t.Error("the state was answered twice")
	}
}
