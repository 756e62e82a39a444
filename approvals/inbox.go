// Package approvals is the inbox of tool calls waiting for a human across
// every run: it lists them through visibility (runs whose AwaitingDecision
// search attribute is set) and each run's pending_permissions query, gives
// each call a short reference, and sends decisions through the
// decide_permission update with the hash of the arguments the person saw,
// so a decision on arguments that changed since is refused by the run.
//
// The terminal (starter pending/approve/deny) and the web page
// (approvals/web) are two views of the same Inbox.
package approvals

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// Client is the part of the Temporal client the inbox uses.
type Client interface {
	ListWorkflow(ctx context.Context, request *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
	QueryWorkflow(ctx context.Context, workflowID string, runID string, queryType string, args ...any) (converter.EncodedValue, error)
	UpdateWorkflow(ctx context.Context, options client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error)
}

// Limits on one listing.
const (
	// MaxRuns caps the runs one listing reads.
	MaxRuns = 500
	// queryTimeout bounds one run's pending_permissions query: a run
	// whose workers are all down is reported, not waited for.
	queryTimeout = 5 * time.Second
	// queryParallelism bounds concurrent queries.
	queryParallelism = 8
	// SummaryRunes caps a call's one-line argument summary.
	SummaryRunes = 100
)

// Call is one tool call waiting for a decision.
type Call struct {
	// Ref is the short reference starter approve/deny accept. It covers
	// the arguments' hash, so it stops resolving when they change.
	Ref            string `json:"ref"`
	WorkflowID     string `json:"workflow_id"`
	RunID          string `json:"run_id"`
	WorkflowType   string `json:"workflow_type"`
	ConversationID string `json:"conversation_id,omitempty"`
	TurnID         string `json:"turn_id,omitempty"`
	CallID         string `json:"call_id"`
	ToolName       string `json:"tool_name"`
	// Permission is the reason the call asks; RequestedBy the hook that
	// asked.
	Permission  string         `json:"permission"`
	RequestedBy string         `json:"requested_by,omitempty"`
	Arguments   map[string]any `json:"arguments"`
	Summary     string         `json:"summary"`
	// SummaryCut is set when the summary does not show every argument:
	// the starter then prints them whole and the inbox page opens them.
	SummaryCut        bool      `json:"summary_cut,omitempty"`
	ArgsHash          string    `json:"args_hash"`
	PolicyFingerprint string    `json:"policy_fingerprint,omitempty"`
	RequestedAt       time.Time `json:"requested_at"`
	Deadline          time.Time `json:"deadline"`
	WaitingSeconds    int64     `json:"waiting_seconds"`
	ExpiresInSeconds  int64     `json:"expires_in_seconds"`
	// WebUIURL is the run's page in the Temporal Web UI.
	WebUIURL string `json:"web_ui_url,omitempty"`
}

// Problem is a run listed as waiting whose calls could not be read (its
// workers are down, or it closed meanwhile).
type Problem struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	Error      string `json:"error"`
}

// Listing is one read of the inbox.
type Listing struct {
	Calls    []Call    `json:"calls"`
	Problems []Problem `json:"problems,omitempty"`
	// Truncated says more than MaxRuns runs matched.
	Truncated bool      `json:"truncated,omitempty"`
	At        time.Time `json:"at"`
}

// Inbox lists and decides waiting calls on one namespace.
type Inbox struct {
	Client    Client
	Namespace string
	// UIBase is the Temporal Web UI's address for run links; empty
	// leaves them out.
	UIBase string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (in *Inbox) now() time.Time {
	if in.Now != nil {
		return in.Now()
	}
	return time.Now()
}

// VisibilityQuery is the list filter: running runs that wait for a
// decision, narrowed by extra (a visibility query, e.g.
// `ConversationId = "c1"`) when given.
func VisibilityQuery(extra string) string {
	q := fmt.Sprintf("%s = %q AND ExecutionStatus = \"Running\"", workflows.SearchAttrAwaitingDecision.GetName(), workflows.AwaitingDecisionValue)
	if extra = strings.TrimSpace(extra); extra != "" {
		q += " AND (" + extra + ")"
	}
	return q
}

// List reads every waiting call, newest first.
func (in *Inbox) List(ctx context.Context, extra string) (Listing, error) {
	query := VisibilityQuery(extra)
	var execs []runRef
	var token []byte
	truncated := false
	for {
		resp, err := in.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: in.Namespace, Query: query, NextPageToken: token, PageSize: 100})
		if err != nil {
			return Listing{}, fmt.Errorf("listing runs waiting for a decision in namespace %q with query %q: %w", in.Namespace, query, err)
		}
		for _, e := range resp.GetExecutions() {
			execs = append(execs, runRef{workflowID: e.GetExecution().GetWorkflowId(), runID: e.GetExecution().GetRunId(), workflowType: e.GetType().GetName()})
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
		if len(execs) >= MaxRuns {
			truncated = true
			break
		}
	}
	if len(execs) > MaxRuns {
		execs, truncated = execs[:MaxRuns], true
	}
	now := in.now()
	out := Listing{Truncated: truncated, At: now.UTC(), Calls: []Call{}}
	results := make([]runPending, len(execs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, queryParallelism)
	for i, r := range execs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = in.pending(ctx, r)
		}()
	}
	wg.Wait()
	for i, r := range execs {
		if err := results[i].err; err != nil {
			out.Problems = append(out.Problems, Problem{WorkflowID: r.workflowID, RunID: r.runID, Error: err.Error()})
			continue
		}
		for _, p := range results[i].calls {
			out.Calls = append(out.Calls, in.call(r, p, now))
		}
	}
	slices.SortStableFunc(out.Calls, func(a, b Call) int {
		if c := b.RequestedAt.Compare(a.RequestedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Ref, b.Ref)
	})
	return out, nil
}

type runRef struct{ workflowID, runID, workflowType string }

type runPending struct {
	calls []workflows.PendingPermission
	err   error
}

func (in *Inbox) pending(ctx context.Context, r runRef) runPending {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	v, err := in.Client.QueryWorkflow(ctx, r.workflowID, r.runID, workflows.QueryPendingPermissions)
	if err != nil {
		return runPending{err: fmt.Errorf("query %s of run %s: %w", workflows.QueryPendingPermissions, r.workflowID, err)}
	}
	var calls []workflows.PendingPermission
	if err := v.Get(&calls); err != nil {
		return runPending{err: fmt.Errorf("decode %s of run %s: %w", workflows.QueryPendingPermissions, r.workflowID, err)}
	}
	return runPending{calls: calls}
}

func (in *Inbox) call(r runRef, p workflows.PendingPermission, now time.Time) Call {
	hash := p.ArgsHash
	if hash == "" {
		// Runs from before shapeInbox do not report it.
		hash = contract.ArgumentsHash(p.Arguments)
	}
	c := Call{
		Ref: Ref(r.workflowID, p.CallID, hash), WorkflowID: r.workflowID, RunID: r.runID, WorkflowType: r.workflowType,
		ConversationID: p.ConversationID, TurnID: p.TurnID, CallID: p.CallID, ToolName: p.ToolName,
		Permission: p.Permission, RequestedBy: p.RequestedBy, Arguments: p.Arguments,
		ArgsHash: hash, PolicyFingerprint: p.PolicyFingerprint, RequestedAt: p.RequestedAt, Deadline: p.Deadline,
		WaitingSeconds: int64(now.Sub(p.RequestedAt) / time.Second), ExpiresInSeconds: int64(p.Deadline.Sub(now) / time.Second),
	}
	c.Summary, c.SummaryCut = summarize(p.Arguments, SummaryRunes)
	if c.WaitingSeconds < 0 {
		c.WaitingSeconds = 0
	}
	if in.UIBase != "" {
		c.WebUIURL = RunURL(in.UIBase, in.Namespace, r.workflowID, r.runID)
	}
	return c
}

// RunURL is a run's page in the Temporal Web UI.
func RunURL(base, namespace, workflowID, runID string) string {
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/history", strings.TrimRight(base, "/"),
		url.PathEscape(namespace), url.PathEscape(workflowID), url.PathEscape(runID))
}

// RefLen is the length of a short reference.
const RefLen = 8

// Ref is a call's short reference: it names the run, the call and the
// arguments, so a listed reference stops resolving once they change.
func Ref(workflowID, callID, argsHash string) string {
	sum := sha256.Sum256([]byte(workflowID + "\x00" + callID + "\x00" + argsHash))
	return hex.EncodeToString(sum[:])[:RefLen]
}

// ErrNoSuchCall is wrapped by Find when no waiting call matches.
var ErrNoSuchCall = errors.New("no call waiting for a decision matches")

// Find lists the inbox and returns the call with reference ref.
func (in *Inbox) Find(ctx context.Context, ref string) (Call, error) {
	ref = strings.ToLower(strings.TrimSpace(ref))
	l, err := in.List(ctx, "")
	if err != nil {
		return Call{}, err
	}
	for _, c := range l.Calls {
		if c.Ref == ref {
			return c, nil
		}
	}
	return Call{}, fmt.Errorf("%w reference %q (%d calls wait now; a call that was decided, expired or whose arguments changed no longer has it): run `starter pending` again",
		ErrNoSuchCall, ref, len(l.Calls))
}

// ListRun reads the waiting calls of one run (its current run).
func (in *Inbox) ListRun(ctx context.Context, workflowID string) ([]Call, error) {
	r := runRef{workflowID: workflowID}
	res := in.pending(ctx, r)
	if res.err != nil {
		return nil, res.err
	}
	now := in.now()
	out := make([]Call, 0, len(res.calls))
	for _, p := range res.calls {
		out = append(out, in.call(r, p, now))
	}
	return out, nil
}

// FindByIDs returns the waiting call callID of workflowID.
func (in *Inbox) FindByIDs(ctx context.Context, workflowID, callID string) (Call, error) {
	calls, err := in.ListRun(ctx, workflowID)
	if err != nil {
		return Call{}, err
	}
	for _, c := range calls {
		if c.CallID == callID {
			return c, nil
		}
	}
	return Call{}, fmt.Errorf("%w call %q in run %q (%d calls wait there)", ErrNoSuchCall, callID, workflowID, len(calls))
}

// Decision is a person's answer to one call.
type Decision struct {
	WorkflowID string
	// RunID pins the run shown; empty means the current run.
	RunID  string
	CallID string
	// ArgsHash is the hash of the arguments the person saw.
	ArgsHash string
	Decision string
	Reason   string
	// DecidedBy names the person: a token's name or the CLI user.
	DecidedBy string
	// Content answers an MCP server's form (an elicitation's allow).
	Content map[string]any
}

// Validate checks a decision before it is sent.
func (d Decision) Validate() error {
	switch {
	case d.Decision != workflows.DecisionAllow && d.Decision != workflows.DecisionDeny:
		return fmt.Errorf("decision %q is not %q or %q", d.Decision, workflows.DecisionAllow, workflows.DecisionDeny)
	case d.WorkflowID == "" || d.CallID == "":
		return errors.New("a decision needs the run's workflow ID and the call ID")
	case d.DecidedBy == "":
		return fmt.Errorf("decision on call %q has no decider: every decision records who made it", d.CallID)
	}
	return nil
}

// Decide sends d through decide_permission and waits for the run to
// accept it. The update ID is derived from the call, decision and
// arguments, so a repeated click is answered once.
func (in *Inbox) Decide(ctx context.Context, d Decision) (workflows.PermissionDecisionResult, error) {
	var out workflows.PermissionDecisionResult
	if err := d.Validate(); err != nil {
		return out, err
	}
	hashPart := strings.TrimPrefix(d.ArgsHash, "sha256:")
	if len(hashPart) > 16 {
		hashPart = hashPart[:16]
	}
	if d.Content != nil {
		// Another answer to the same form is another update: one the run
		// refused (it did not match the form) may be corrected.
		hashPart += "-" + strings.TrimPrefix(contract.ArgumentsHash(d.Content), "sha256:")[:16]
	}
	handle, err := in.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: d.WorkflowID, RunID: d.RunID, UpdateName: workflows.UpdateDecidePermission,
		UpdateID:     fmt.Sprintf("decide-%s-%s-%s", d.CallID, d.Decision, hashPart),
		WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{workflows.PermissionDecision{CallID: d.CallID, Decision: d.Decision, Reason: d.Reason,
			ArgsHash: d.ArgsHash, DecidedBy: d.DecidedBy, Content: d.Content}},
	})
	if err == nil {
		err = handle.Get(ctx, &out)
	}
	if err != nil {
		return out, fmt.Errorf("%s call %q of run %q: %w", d.Decision, d.CallID, d.WorkflowID, err)
	}
	return out, nil
}
