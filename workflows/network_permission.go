package workflows

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

// A network-sandboxed command that connects to a host its sandbox
// neither allows nor denies is not refused outright: its ExecuteTool sends
// activities.UpdateNetworkPermission, and the run parks a permission for
// the host beside the call — in pending_permissions, the inbox and the
// Web UI's details, answered with decide_permission like any other — as
// Claude Code asks its user ("Network request outside of sandbox"). The
// update only arrives from a command, so runs recorded before it replay
// unchanged; its commands (the search attribute, the decision's audit
// row) are those of a parked call.

// networkRequester is a network permission's RequestedBy.
const networkRequester = "sandbox.network"

// maxNetworkHostBytes bounds the host an update may name (a DNS name is
// at most 253 bytes).
const maxNetworkHostBytes = 253

// A command that opens connections to many hosts (a scan, a loop) must
// not fill its run's history with questions: a run holds at most
// maxOpenNetworkAsks unanswered and maxNetworkAsks in all; the validator
// refuses more, which records nothing, and the proxy refuses the
// connection.
const (
	maxOpenNetworkAsks = 4
	maxNetworkAsks     = 32
)

// registerNetworkPermission installs the update's handler.
func (s *session) registerNetworkPermission() error {
	return workflow.SetUpdateHandlerWithOptions(s.ctx, activities.UpdateNetworkPermission, s.askNetwork,
		workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, req activities.NetworkPermissionRequest) error {
			switch {
			case req.CallID == "" || len(req.CallID) > contract.EchoStringBytes:
				return fmt.Errorf("a network permission needs the call_id of the command asking (at most %d bytes)", contract.EchoStringBytes)
			case req.Host == "" || len(req.Host) > maxNetworkHostBytes:
				return fmt.Errorf("a network permission needs a host of 1 to %d bytes", maxNetworkHostBytes)
			case req.Port < 1 || req.Port > 65535:
				return fmt.Errorf("a network permission needs a port from 1 to 65535, not %d", req.Port)
			case s.cancelled:
				return fmt.Errorf("the run is canceling (%s): no network permission is asked", s.cancelReason)
			case s.endedCommands[req.CallID]:
				return fmt.Errorf("call %q has ended: its command asks nothing more", req.CallID)
			case req.Granted != nil && (len(req.Granted.DecidedBy) > MaxDeciderBytes || len(req.Granted.RunID) > contract.EchoStringBytes):
				return fmt.Errorf("a conversation's grant names a decider of at most %d bytes and a run of at most %d", MaxDeciderBytes, contract.EchoStringBytes)
			}
			if s.findPending(networkPermissionID(req)) != nil || s.allowedNetwork(net.JoinHostPort(req.Host, strconv.Itoa(req.Port))) != nil {
				return nil // answered by the question already asked
			}
			open, all := s.questionsBy(networkRequester)
			switch {
			case open >= maxOpenNetworkAsks:
				return fmt.Errorf("%d network permissions of this run are still unanswered: no more are asked until they are", open)
			case all >= maxNetworkAsks:
				return fmt.Errorf("this run asked about %d hosts already, its limit: further hosts are refused", all)
			}
			return nil
		}})
}

// networkPermissionID is the pending permission's call_id: the call's,
// with the destination, so decide_permission names it and a second
// connection to the same host waits for the same answer.
func networkPermissionID(req activities.NetworkPermissionRequest) string {
	return req.CallID + "/network/" + net.JoinHostPort(req.Host, strconv.Itoa(req.Port))
}

// askNetwork parks the permission (or joins the one already parked for
// the destination) until decide_permission, its deadline (deny) or a
// cancel (deny), and answers.
func (s *session) askNetwork(ctx workflow.Context, req activities.NetworkPermissionRequest) (activities.NetworkPermissionAnswer, error) {
	id := networkPermissionID(req)
	dest := net.JoinHostPort(req.Host, strconv.Itoa(req.Port))
	if earlier := s.allowedNetwork(dest); earlier != nil && earlier.CallID != id {
		// Allowed for an earlier command of this run: not asked again
		// (Claude Code's "don't ask again for this host", for the run).
		return activities.NetworkPermissionAnswer{Allowed: true, Reason: "allowed for " + earlier.CallID, DecidedBy: decider(earlier.decision)}, nil
	}
	p := s.findPending(id)
	if p == nil && req.Granted != nil {
		return s.grantedNetwork(ctx, req, id, dest), nil
	}
	if p == nil {
		args := map[string]any{"call_id": req.CallID, "host": req.Host, "port": req.Port}
		p = s.newQuestion(ctx, id, req.ToolName, "network: "+dest, networkRequester, args)
		s.park(p, req.CallID, "waiting_for_network_permission")
		// Claude Code's Notification hooks hear of its network prompt as
		// of any permission prompt (a desktop notice, a chat message).
		s.notifyPermissionPending(ctx, contract.ToolCall{CallID: req.CallID, ToolName: req.ToolName},
			hooks.PermissionRequirement{Permission: p.Permission, Hook: networkRequester})
	}
	if _, err := workflow.AwaitWithTimeout(ctx, p.Deadline.Sub(workflow.Now(ctx)), s.questionOpen(p, req.CallID)); err != nil {
		return activities.NetworkPermissionAnswer{}, err
	}
	s.settle(ctx, p, req.CallID, "withdrawn: the command ended before anyone answered", "no decision within %s")
	// The first of the connections waiting for it records the decision.
	s.recordQuestion(ctx, p)
	who := p.decidedBy
	if who == "decide_permission" {
		who = decider(p.decision)
	}
	allowed := p.decision.Decision == DecisionAllow
	return activities.NetworkPermissionAnswer{Allowed: allowed, Reason: p.decision.Reason, DecidedBy: who,
		Remember: allowed && p.decidedBy == "decide_permission"}, nil
}

// conversationDecider is the decider of a destination a person allowed
// earlier in the conversation.
const conversationDecider = "conversation"

// grantedNetwork allows a destination a person allowed earlier in the
// conversation: it is recorded as a decided permission (the trace, the
// audit row, the run's memory for its later commands), without asking.
func (s *session) grantedNetwork(ctx workflow.Context, req activities.NetworkPermissionRequest, id, dest string) activities.NetworkPermissionAnswer {
	g := req.Granted
	now := workflow.Now(ctx).UTC()
	args := map[string]any{"call_id": req.CallID, "host": req.Host, "port": req.Port}
	reason := fmt.Sprintf("allowed earlier in the conversation by %s (run %s, %s)", g.DecidedBy, g.RunID, g.At.UTC().Format(time.RFC3339))
	p := &PendingPermission{CallID: id, ToolName: req.ToolName, Permission: "network: " + dest, RequestedBy: networkRequester,
		Arguments: args, RequestedAt: now, Deadline: now, ConversationID: s.id.ConversationID, TurnID: s.id.TurnID,
		ArgsHash: contract.ArgumentsHash(args), decided: true, decidedAt: now, decidedBy: conversationDecider, recorded: true,
		decision: PermissionDecision{CallID: id, Decision: DecisionAllow, Reason: reason, DecidedBy: g.DecidedBy}}
	s.gov.pending = append(s.gov.pending, p)
	s.recordDecision(ctx, contract.ToolCall{CallID: id, ToolName: req.ToolName}, p, conversationDecider)
	return activities.NetworkPermissionAnswer{Allowed: true, Reason: reason, DecidedBy: conversationDecider}
}

// commandEndedDecider is a withdrawn network question's decider.
const commandEndedDecider = "command_ended"

// commandEnded notes that a call's ExecuteTool has ended: its command
// asks nothing more, so its unanswered network questions (and its MCP
// server's, see elicitation.go) are withdrawn, and the call goes on once
// their handlers have traced that.
func (s *session) commandEnded(ctx workflow.Context, callID string) {
	if s.shape < shapeNetworkAsksEnd {
		return
	}
	if s.endedCommands == nil {
		s.endedCommands = map[string]bool{}
	}
	s.endedCommands[callID] = true
	network, elicitation := callID+"/network/", callID+"/elicitation/"
	_ = workflow.Await(ctx, func() bool {
		for _, p := range s.gov.pending {
			if !p.recorded && (p.RequestedBy == networkRequester && strings.HasPrefix(p.CallID, network) ||
				p.RequestedBy == ElicitationRequester && strings.HasPrefix(p.CallID, elicitation)) {
				return false
			}
		}
		return true
	})
}

// finishHandlers lets the update handlers still running (a withdrawn
// question writing its audit row) finish before the run completes, so
// none is abandoned. It waits only when one is running: other runs
// record nothing for it.
func (s *session) finishHandlers() {
	if s.shape < shapeNetworkAsksEnd || workflow.AllHandlersFinished(s.ctx) {
		return
	}
	ctx, _ := workflow.NewDisconnectedContext(s.ctx)
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
}

// allowedNetwork is the run's network permission that allowed dest, nil
// for none.
func (s *session) allowedNetwork(dest string) *PendingPermission {
	for _, p := range s.gov.pending {
		if p.RequestedBy == networkRequester && p.decided && p.decision.Decision == DecisionAllow && p.Permission == "network: "+dest {
			return p
		}
	}
	return nil
}
