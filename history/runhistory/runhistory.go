// Package runhistory reads the stages of a Fenix workflow run out of its
// Temporal history, whichever way each stage ran: as a regular activity
// (ActivityTaskScheduled, then Started and a closing event, with the input
// recorded) or as a local activity (one LocalActivity marker holding only
// the result or the failure). Both carry the ID of the workflow task that
// produced them — the point a reset must go back to to run the stage again.
//
// policy-diff (package policydiff) and rewind (package rewind) build on it;
// neither needs a Temporal server, only the events.
package runhistory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// Activity types of the stages this package knows about: the method names
// of activities.Activities, which is how the worker registers them.
const (
	TypePrepareTurn         = "PrepareTurn"
	TypeCompactContext      = "CompactContext"
	TypeSummarizeContext    = "SummarizeContext"
	TypeReviewToolCall      = "ReviewToolCall"
	TypePreToolUse          = "RunPreToolUseHooks"
	TypePermissionRequest   = "RunPermissionRequestHooks"
	TypeExecuteTool         = "ExecuteTool"
	TypeProjectToolResult   = "ProjectToolResult"
	TypePostToolUse         = "RunPostToolUseHooks"
	TypeCallModel           = "CallModel"
	TypeLifecycleHooks      = "RunLifecycleHooks"
	localActivityMarkerName = "LocalActivity"
	versionMarkerName       = "Version"
)

// versionShape is the workflows package's change ID of newer runs, and
// shapeRunUniqueCallIDs the shape since which an agent turn renames a call
// ID an earlier step of its run used (workflows/versions.go).
const (
	versionShape          = "fenix-shape"
	shapeRunUniqueCallIDs = 12
)

// Workflow types whose runs carry tool calls.
const (
	workflowExecuteAssignment = "ExecuteAssignment"
	workflowAgentTurn         = "AgentTurn"
)

// Outcome is how a stage ended.
type Outcome string

// Outcomes. A regular activity without a closing event is pending: it may
// be running (history records ActivityTaskStarted only when a retried
// activity closes).
const (
	OutcomePending   Outcome = "pending"
	OutcomeCompleted Outcome = "completed"
	OutcomeFailed    Outcome = "failed"
	OutcomeTimedOut  Outcome = "timed_out"
	OutcomeCanceled  Outcome = "canceled"
)

// Stage is one execution of a stage activity.
type Stage struct {
	// Type is the activity type, e.g. "RunPreToolUseHooks".
	Type string
	// EventID is the ActivityTaskScheduled event or the marker.
	EventID int64
	// WorkflowTaskCompletedEventID is the workflow task that scheduled the
	// stage (or ran it, for a local activity): resetting to it runs the
	// stage again, with every other stage of that task.
	WorkflowTaskCompletedEventID int64
	// Local is set for a local activity.
	Local bool
	// Started is set when a worker picked the stage up (always for a
	// local activity).
	Started bool
	Outcome Outcome
	// CallID is the tool call the stage works on, when it is about one.
	CallID string
	// Step is the AgentTurn step the stage belongs to (0 outside AgentTurn).
	Step int

	input   *commonpb.Payloads
	result  *commonpb.Payloads
	failure *failurepb.Failure
	run     *Run
}

// DecodeInput decodes the stage's input into v. It returns false when the
// input is not in history: a local activity records only its result.
func (s *Stage) DecodeInput(v any) (bool, error) {
	if s.input == nil {
		return false, nil
	}
	if err := s.run.dc.FromPayloads(s.input, v); err != nil {
		return true, fmt.Errorf("%s input (event %d): %w", s.Type, s.EventID, err)
	}
	return true, nil
}

// DecodeResult decodes the stage's result into v. It returns false when
// the stage has no result (it failed or has not finished).
func (s *Stage) DecodeResult(v any) (bool, error) {
	if s.result == nil {
		return false, nil
	}
	if err := s.run.dc.FromPayloads(s.result, v); err != nil {
		return true, fmt.Errorf("%s result (event %d): %w", s.Type, s.EventID, err)
	}
	return true, nil
}

// Failure is the classified error a failed or timed-out stage ended with,
// or nil.
func (s *Stage) Failure() *fenixerr.Error {
	if s.failure == nil {
		return nil
	}
	return fenixerr.FromTemporal(s.run.fc.FailureToError(s.failure))
}

// Child is a child workflow (a subagent) the run started.
type Child struct {
	WorkflowID                   string
	WorkflowType                 string
	EventID                      int64
	WorkflowTaskCompletedEventID int64
	Started                      bool
}

// Update is an accepted workflow update (decide_permission).
type Update struct {
	Name    string
	EventID int64
	args    *commonpb.Payloads
	run     *Run
}

// Decode decodes the update's argument into v.
func (u Update) Decode(v any) error {
	if u.args == nil {
		return fmt.Errorf("update %s (event %d) has no argument", u.Name, u.EventID)
	}
	return u.run.dc.FromPayloads(u.args, v)
}

// Run is one workflow run's stages.
type Run struct {
	WorkflowID   string
	RunID        string
	WorkflowType string
	Stages       []*Stage
	Children     []Child
	Updates      []Update
	// Closed is set when history holds the run's closing event.
	Closed bool
	// Versions are the run's workflow.GetVersion markers: change ID to
	// version.
	Versions map[string]int

	input   *commonpb.Payloads
	request *contract.AgentTurnRequest
	output  *commonpb.Payloads
	dc      converter.DataConverter
	fc      converter.FailureConverter
}

// Request is the decoded start input: the assignment, plus the turn
// fields for AgentTurn. It is decoded on first use (a transcript can be
// large); an error names the run.
func (r *Run) Request() (contract.AgentTurnRequest, error) {
	if r.request != nil {
		return *r.request, nil
	}
	if r.input == nil {
		return contract.AgentTurnRequest{}, fmt.Errorf("%s %s has no input", r.WorkflowType, r.WorkflowID)
	}
	var raw json.RawMessage
	if err := r.dc.FromPayloads(r.input, &raw); err != nil {
		return contract.AgentTurnRequest{}, fmt.Errorf("decoding the input of %s %s: %w", r.WorkflowType, r.WorkflowID, err)
	}
	// Lenient on purpose: a run whose input failed validation still has
	// stages worth reading.
	var req contract.AgentTurnRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return req, fmt.Errorf("the input of %s %s is not an assignment: %w", r.WorkflowType, r.WorkflowID, err)
	}
	r.request = &req
	return req, nil
}

// DecodeResult decodes the run's result (a contract.Result, or a
// narrower struct of its fields) into v. It returns false when the run did
// not complete with a result.
func (r *Run) DecodeResult(v any) (bool, error) {
	if r.output == nil {
		return false, nil
	}
	if err := r.dc.FromPayloads(r.output, v); err != nil {
		return true, fmt.Errorf("decoding the result of %s %s: %w", r.WorkflowType, r.WorkflowID, err)
	}
	return true, nil
}

// IsToolRun reports whether the run is of a workflow type that runs tool
// calls (ExecuteAssignment or AgentTurn).
func (r *Run) IsToolRun() bool {
	return r.WorkflowType == workflowExecuteAssignment || r.WorkflowType == workflowAgentTurn
}

// Parse reads a run's stages. dc must be the workers' data converter (the
// payload codec included), or payloads will not decode; nil means the
// default converter.
func Parse(workflowID, runID string, events []*historypb.HistoryEvent, dc converter.DataConverter) (*Run, error) {
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	if len(events) == 0 || events[0].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
		return nil, fmt.Errorf("history of %s does not start with WorkflowExecutionStarted", workflowID)
	}
	started := events[0].GetWorkflowExecutionStartedEventAttributes()
	if runID == "" {
		runID = started.GetOriginalExecutionRunId()
	}
	r := &Run{
		WorkflowID:   workflowID,
		RunID:        runID,
		WorkflowType: started.GetWorkflowType().GetName(),
		input:        started.GetInput(),
		dc:           dc,
		fc:           temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc}),
	}

	scheduled := map[int64]*Stage{}
	children := map[int64]int{}
	for _, e := range events[1:] {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			s := &Stage{Type: a.GetActivityType().GetName(), EventID: e.GetEventId(),
				WorkflowTaskCompletedEventID: a.GetWorkflowTaskCompletedEventId(), Outcome: OutcomePending, input: a.GetInput(), run: r}
			scheduled[s.EventID] = s
			r.Stages = append(r.Stages, s)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			if s := scheduled[e.GetActivityTaskStartedEventAttributes().GetScheduledEventId()]; s != nil {
				s.Started = true
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := e.GetActivityTaskCompletedEventAttributes()
			if s := scheduled[a.GetScheduledEventId()]; s != nil {
				s.Outcome, s.result = OutcomeCompleted, a.GetResult()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			a := e.GetActivityTaskFailedEventAttributes()
			if s := scheduled[a.GetScheduledEventId()]; s != nil {
				s.Outcome, s.failure = OutcomeFailed, a.GetFailure()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			a := e.GetActivityTaskTimedOutEventAttributes()
			if s := scheduled[a.GetScheduledEventId()]; s != nil {
				s.Outcome, s.failure = OutcomeTimedOut, a.GetFailure()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			if s := scheduled[e.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()]; s != nil {
				s.Outcome = OutcomeCanceled
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if s := r.localActivity(e); s != nil {
				r.Stages = append(r.Stages, s)
			}
			r.version(e)
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes()
			children[e.GetEventId()] = len(r.Children)
			r.Children = append(r.Children, Child{WorkflowID: a.GetWorkflowId(), WorkflowType: a.GetWorkflowType().GetName(),
				EventID: e.GetEventId(), WorkflowTaskCompletedEventID: a.GetWorkflowTaskCompletedEventId()})
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
			if i, ok := children[e.GetChildWorkflowExecutionStartedEventAttributes().GetInitiatedEventId()]; ok {
				r.Children[i].Started = true
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			req := e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest()
			r.Updates = append(r.Updates, Update{Name: req.GetInput().GetName(), EventID: e.GetEventId(), args: req.GetInput().GetArgs(), run: r})
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			r.Closed = true
			r.output = e.GetWorkflowExecutionCompletedEventAttributes().GetResult()
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			r.Closed = true
		}
	}
	r.assignSteps()
	r.assignCalls()
	return r, nil
}

// localActivity reads a LocalActivity marker; other markers (versions,
// side effects) return nil.
func (r *Run) localActivity(e *historypb.HistoryEvent) *Stage {
	a := e.GetMarkerRecordedEventAttributes()
	if a.GetMarkerName() != localActivityMarkerName {
		return nil
	}
	var data struct{ ActivityType string }
	if err := r.dc.FromPayloads(a.GetDetails()["data"], &data); err != nil || data.ActivityType == "" {
		return nil
	}
	s := &Stage{Type: data.ActivityType, EventID: e.GetEventId(), WorkflowTaskCompletedEventID: a.GetWorkflowTaskCompletedEventId(),
		Local: true, Started: true, Outcome: OutcomeCompleted, result: a.GetDetails()["result"], run: r}
	if f := a.GetFailure(); f != nil {
		s.Outcome, s.failure, s.result = OutcomeFailed, f, nil
	}
	return s
}

// version records a Version marker (workflow.GetVersion).
func (r *Run) version(e *historypb.HistoryEvent) {
	a := e.GetMarkerRecordedEventAttributes()
	if a.GetMarkerName() != versionMarkerName {
		return
	}
	var changeID string
	var version int
	if r.dc.FromPayloads(a.GetDetails()["change-id"], &changeID) != nil || r.dc.FromPayloads(a.GetDetails()["version"], &version) != nil {
		return
	}
	if r.Versions == nil {
		r.Versions = map[string]int{}
	}
	r.Versions[changeID] = version
}

// assignSteps numbers AgentTurn steps: each step starts with PrepareTurn,
// and a continued run resumes after the step its continuation carries.
func (r *Run) assignSteps() {
	if r.WorkflowType != workflowAgentTurn {
		return
	}
	step := 0
	if req, err := r.Request(); err == nil && req.Continuation != nil {
		step = req.Continuation.Step
	}
	for _, s := range r.Stages {
		if s.Type == TypePrepareTurn {
			step++
		}
		s.Step = step
	}
}

// callIDOf reads the call ID from a stage's input, else from the trace
// entry of its result.
func callIDOf(s *Stage) string {
	var in struct {
		CallID   string `json:"call_id"`
		ToolCall struct {
			CallID string `json:"call_id"`
		} `json:"tool_call"`
	}
	if ok, err := s.DecodeInput(&in); ok && err == nil {
		if in.ToolCall.CallID != "" {
			return in.ToolCall.CallID
		}
		return in.CallID
	}
	var out struct {
		ToolCall struct {
			CallID string `json:"call_id"`
		} `json:"tool_call"`
		Trace struct {
			CallID string `json:"call_id"`
		} `json:"trace"`
	}
	if ok, err := s.DecodeResult(&out); ok && err == nil {
		if out.ToolCall.CallID != "" {
			return out.ToolCall.CallID
		}
		return out.Trace.CallID
	}
	return ""
}

// callStages are the stages about one tool call.
var callStages = map[string]bool{
	TypeReviewToolCall: true, TypePreToolUse: true, TypePermissionRequest: true,
	TypeExecuteTool: true, TypePostToolUse: true,
}

// assignCalls names the call of every per-call stage. A review that failed
// as a local activity records neither input nor result; it is matched to
// a call of its step no other review claimed, for the tool its failure
// names. (Markers are recorded as the parallel reviews finish, so their
// order says nothing.)
func (r *Run) assignCalls() {
	for _, s := range r.Stages {
		if callStages[s.Type] {
			s.CallID = callIDOf(s)
		}
	}
	reviewed := map[string]bool{}
	for _, s := range r.Stages {
		if s.Type == TypeReviewToolCall && s.CallID != "" {
			reviewed[s.CallID] = true
		}
	}
	var requested []RequestedCall
	for _, s := range r.Stages {
		if s.Type != TypeReviewToolCall || s.CallID != "" {
			continue
		}
		if requested == nil {
			requested = r.RequestedCalls()
		}
		tool := ""
		if fe := s.Failure(); fe != nil {
			tool = fe.Tool
		}
		var match *RequestedCall
		for i := range requested {
			c := &requested[i]
			if c.Step != s.Step || c.Call.ToolName == SubagentTool || reviewed[c.Call.CallID] {
				continue
			}
			if c.Call.ToolName == tool {
				match = c
				break
			}
			if match == nil {
				match = c
			}
		}
		if match != nil {
			s.CallID = match.Call.CallID
			reviewed[match.Call.CallID] = true
		}
	}
}

// RequestedCall is a tool call the assignment or the model asked for.
type RequestedCall struct {
	Step int
	Call contract.ToolCall
}

// SubagentTool is run as a child workflow, not through ReviewToolCall.
const SubagentTool = "spawn_subagent"

// RequestedCalls lists the tool calls of the run in order: the
// assignment's for ExecuteAssignment, each model answer's for AgentTurn
// (with the IDs the workflow gives calls the model left unnamed).
func (r *Run) RequestedCalls() []RequestedCall {
	switch r.WorkflowType {
	case workflowExecuteAssignment:
		req, err := r.Request()
		if err != nil || req.ToolCall == nil {
			return nil
		}
		return []RequestedCall{{Call: *req.ToolCall}}
	case workflowAgentTurn:
		var out []RequestedCall
		// Since fenix-shape 12 the workflow renames an ID an earlier step
		// of the run used; the stages carry the renamed IDs.
		var used map[string]bool
		if r.Versions[versionShape] >= shapeRunUniqueCallIDs {
			used = map[string]bool{}
		}
		for _, s := range r.Stages {
			if s.Type != TypeCallModel {
				continue
			}
			var answer struct {
				Message contract.Message `json:"message"`
			}
			if ok, err := s.DecodeResult(&answer); !ok || err != nil {
				continue
			}
			calls := slices.Clone(answer.Message.ToolCalls)
			for i := range calls {
				if calls[i].CallID == "" {
					calls[i].CallID = fmt.Sprintf("call-%d-%d", s.Step, i+1)
				}
				if calls[i].Arguments == nil {
					calls[i].Arguments = map[string]any{}
				}
			}
			if used != nil {
				contract.RenameReusedCallIDs(calls, used)
			}
			for _, c := range calls {
				out = append(out, RequestedCall{Step: s.Step, Call: c})
			}
		}
		return out
	}
	return nil
}

// StagesOf lists the run's stages of one activity type, in history order.
func (r *Run) StagesOf(activityType string) []*Stage {
	var out []*Stage
	for _, s := range r.Stages {
		if s.Type == activityType {
			out = append(out, s)
		}
	}
	return out
}

// ReadJSONFile reads a history exported as JSON (`temporal workflow show
// --output json`, the Web UI's download, workflows/testdata/*.json).
func ReadJSONFile(path string) ([]*historypb.HistoryEvent, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var h historypb.History
	if err := (temporalproto.CustomJSONUnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("%s is not a Temporal history in JSON: %w", path, err)
	}
	return h.GetEvents(), nil
}

// Fetch reads one run's full history from the server and parses it. dc
// must be the client's data converter.
func Fetch(ctx context.Context, c client.Client, workflowID, runID string, dc converter.DataConverter) (*Run, error) {
	var events []*historypb.HistoryEvent
	iter := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return Parse(workflowID, runID, events, dc)
}

// Ref names a run.
type Ref struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
}

// ToolRunsQuery is the visibility query for ExecuteAssignment and
// AgentTurn runs, narrowed by extra when it is not empty.
func ToolRunsQuery(extra string) string {
	q := fmt.Sprintf("(WorkflowType = '%s' OR WorkflowType = '%s')", workflowExecuteAssignment, workflowAgentTurn)
	if extra != "" {
		q += " AND (" + extra + ")"
	}
	return q
}

// List lists the runs a visibility query matches, every page, in a stable
// order (by workflow ID, then run ID).
func List(ctx context.Context, c client.Client, namespace, query string) ([]Ref, error) {
	var refs []Ref
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: query, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("listing runs (query %s): %w", query, err)
		}
		for _, e := range resp.GetExecutions() {
			refs = append(refs, Ref{WorkflowID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId()})
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].WorkflowID != refs[j].WorkflowID {
			return refs[i].WorkflowID < refs[j].WorkflowID
		}
		return refs[i].RunID < refs[j].RunID
	})
	return refs, nil
}
