package mcpserver

// Protocol 2026-07-28 has a server send no request to its client while
// it serves one of the client's (SEP-2322, multi round-trip requests):
// elicitation/create during a tools/call is refused. A call whose run
// waits for a permission the client is to be asked about answers instead
// with the question as an input request and a request state; the client
// asks its user and sends the tools/call again with the answer and that
// state, and the retry applies the answer to the same run and waits on
// for its result. Earlier protocol versions are asked as before.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/workflows"
)

// errInputRequired ends a call's wait when its run has questions for a
// client that takes them as input requests.
var errInputRequired = errors.New("the run has questions for the client")

// Bounds on the questions the gateway waits to hear answered: a client
// that never retries leaves its entry until it expires, and the run to
// an operator.
const (
	inputStateTTL    = time.Hour
	maxPendingInputs = 1024
)

// inputQuestion is a question a call's run has, put to a client as an
// input request.
type inputQuestion struct {
	pending workflows.PendingPermission
	asked   question
}

// pendingInput is what a retry needs to go on with a call that answered
// with input requests: its run, and the questions by input request key.
type pendingInput struct {
	session, tool, workflowID, callID string
	questions                         map[string]workflows.PendingPermission
	expires                           time.Time
}

// inputLedger holds the calls waiting for their clients' answers, by the
// request state they were given.
type inputLedger struct {
	mu     sync.Mutex
	states map[string]pendingInput
}

func newInputLedger() *inputLedger { return &inputLedger{states: map[string]pendingInput{}} }

// put records in and returns its request state: random, so a client
// cannot name another's call.
func (l *inputLedger) put(in pendingInput) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	state := hex.EncodeToString(b[:])
	now := time.Now()
	in.expires = now.Add(inputStateTTL)
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, v := range l.states {
		if now.After(v.expires) {
			delete(l.states, k)
		}
	}
	if len(l.states) >= maxPendingInputs {
		var oldest string
		for k, v := range l.states {
			if oldest == "" || v.expires.Before(l.states[oldest].expires) {
				oldest = k
			}
		}
		delete(l.states, oldest)
	}
	l.states[state] = in
	return state
}

// take returns and forgets the call a request state names, when it was
// given to this session for this tool and has not expired.
func (l *inputLedger) take(state, session, tool string) (pendingInput, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	in, ok := l.states[state]
	if !ok || in.session != session || in.tool != tool || time.Now().After(in.expires) {
		return pendingInput{}, false
	}
	delete(l.states, state)
	return in, true
}

// inputRequired is the call's answer that hands its run's questions to
// the client as input requests.
func (c *call) inputRequired(session string) *mcp.CallToolResult {
	requests := mcp.InputRequestMap{}
	questions := map[string]workflows.PendingPermission{}
	for _, q := range c.inputs {
		requests[q.pending.CallID] = q.asked.params
		questions[q.pending.CallID] = q.pending
	}
	state := c.g.inputs.put(pendingInput{session: session, tool: c.tool, workflowID: c.workflowID, callID: c.callID, questions: questions})
	return &mcp.CallToolResult{InputRequests: requests, RequestState: state}
}

// resume applies a retry's answers to the questions of the call it goes
// on with; a question it leaves unanswered is left to an operator.
func (c *call) resume(ctx context.Context, in pendingInput) {
	for key, p := range in.questions {
		c.asked[p.CallID] = true
		q, ok := c.question(ctx, p)
		if !ok {
			continue
		}
		res, _ := c.req.Params.InputResponses[key].(*mcp.ElicitResult)
		q.answer(ctx, res, nil)
	}
}
