package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/workflows"
)

// Steps of a BareShapeWorkflow.
const (
	shapeLocal    = 'L' // a no-op local activity
	shapeActivity = 'A' // a no-op activity
	// ShapeShTrue is an activity running sh -c true: the work of
	// exec_command true.
	ShapeShTrue = 'X'
)

// Shape is a Fenix run as its shape floors read it from its history.
type Shape struct {
	// Steps has a letter per activity in history order: L for a local
	// one, the caller's letter (A or X) for a regular one.
	Steps string `json:"steps"`
	// Inputs are each step's recorded input bytes (a local activity's
	// input is not recorded: 0); Results each step's result bytes.
	Inputs  []int `json:"inputs"`
	Results []int `json:"results"`
	// Input and Result are the run's own input and result bytes.
	Input  int `json:"input"`
	Result int `json:"result"`
	// Versions counts the run's version markers, each with its
	// TemporalChangeVersion upsert; SideEffects its side-effect markers;
	// Upserts its other search-attribute upserts.
	Versions    int `json:"versions"`
	SideEffects int `json:"side_effects"`
	Upserts     int `json:"upserts"`
}

// bytes is how much the run recorded, in KB: its input, its steps'
// inputs and results, and its result.
func (s Shape) bytes() float64 {
	n := s.Input + s.Result
	for i := range s.Inputs {
		n += s.Inputs[i] + s.Results[i]
	}
	return float64(n) / 1024
}

// ShapeOf reads a run's shape from its history; regular is the letter of
// its regular activities.
func ShapeOf(ctx context.Context, c client.Client, workflowID, runID string, regular rune) (Shape, error) {
	var s Shape
	var steps strings.Builder
	step := map[int64]int{} // a regular activity's scheduled event → its step
	addStep := func(letter rune, input, result int) {
		steps.WriteRune(letter)
		s.Inputs = append(s.Inputs, input)
		s.Results = append(s.Results, result)
	}
	upserts := 0
	iter := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			return Shape{}, err
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			s.Input = payloadBytes(e.GetWorkflowExecutionStartedEventAttributes().GetInput())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			step[e.GetEventId()] = len(s.Inputs)
			addStep(regular, payloadBytes(e.GetActivityTaskScheduledEventAttributes().GetInput()), 0)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := e.GetActivityTaskCompletedEventAttributes()
			if i, ok := step[a.GetScheduledEventId()]; ok {
				s.Results[i] = payloadBytes(a.GetResult())
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			m := e.GetMarkerRecordedEventAttributes()
			switch m.GetMarkerName() {
			case "LocalActivity":
				addStep(shapeLocal, 0, payloadBytes(m.GetDetails()["result"]))
			case "Version":
				s.Versions++
			case "SideEffect":
				s.SideEffects++
			}
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			upserts++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			s.Result = payloadBytes(e.GetWorkflowExecutionCompletedEventAttributes().GetResult())
		}
	}
	s.Steps = steps.String()
	s.Upserts = max(upserts-s.Versions, 0)
	return s, nil
}

func payloadBytes(p *commonpb.Payloads) int {
	n := 0
	for _, pl := range p.GetPayloads() {
		n += len(pl.GetData())
	}
	return n
}

// BareShapeWorkflow runs one step per letter of shape, in sequence: a
// Fenix run's own sequence of local and regular activities with no-op
// stages, so what a Fenix call costs beyond it is its stage code, not
// Temporal's machinery.
func BareShapeWorkflow(ctx workflow.Context, shape string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 30 * time.Second})
	for _, step := range shape {
		var f workflow.Future
		switch step {
		case shapeLocal:
			f = workflow.ExecuteLocalActivity(ctx, Noop)
		case shapeActivity:
			f = workflow.ExecuteActivity(ctx, Noop)
		case ShapeShTrue:
			f = workflow.ExecuteActivity(ctx, ShTrue)
		default:
			return fmt.Errorf("shape %q: step %q is not %c, %c or %c", shape, step, shapeLocal, shapeActivity, ShapeShTrue)
		}
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// PayloadShapeInput is BarePayloadShapeWorkflow's input: the shape, and
// padding that makes the input as large as the Fenix run's.
type PayloadShapeInput struct {
	Shape   Shape  `json:"shape"`
	Padding string `json:"padding,omitempty"`
}

// BarePayloadShapeWorkflow is BareShapeWorkflow carrying what the Fenix
// run recorded: its version and side-effect markers (and the versions'
// upserts), each step's input and result bytes, its other
// search-attribute upserts (at the end, as Fenix makes them when a call
// finishes in one workflow task) and its result's bytes. Every step still
// does nothing, so what a Fenix call costs beyond this floor is neither
// Temporal's machinery nor the size of what it records: it is the work of
// the stages and of the workflow code around them.
func BarePayloadShapeWorkflow(ctx workflow.Context, in PayloadShapeInput) (string, error) {
	s := in.Shape
	if len(s.Inputs) != len(s.Steps) || len(s.Results) != len(s.Steps) {
		return "", fmt.Errorf("shape %q has %d inputs and %d results, want one per step", s.Steps, len(s.Inputs), len(s.Results))
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 30 * time.Second})
	for i := range s.Versions {
		workflow.GetVersion(ctx, fmt.Sprintf("bench-shape-%d", i), workflow.DefaultVersion, 1)
	}
	for range s.SideEffects {
		_ = workflow.SideEffect(ctx, func(workflow.Context) any { return true })
	}
	for i, step := range s.Steps {
		// A string's JSON payload is its bytes and two quotes.
		input, result := padding(s.Inputs[i]-2), s.Results[i]-2
		var f workflow.Future
		switch step {
		case shapeLocal:
			f = workflow.ExecuteLocalActivity(ctx, Payload, result)
		case shapeActivity:
			f = workflow.ExecuteActivity(ctx, PayloadFor, input, result)
		case ShapeShTrue:
			f = workflow.ExecuteActivity(ctx, ShTrueFor, input, result)
		default:
			return "", fmt.Errorf("shape %q: step %q is not %c, %c or %c", s.Steps, step, shapeLocal, shapeActivity, ShapeShTrue)
		}
		if err := f.Get(ctx, nil); err != nil {
			return "", err
		}
	}
	// Fenix's closing upsert sets its four attributes.
	for range s.Upserts {
		var updates []temporal.SearchAttributeUpdate
		for _, key := range []temporal.SearchAttributeKeyKeyword{workflows.SearchAttrConversationID, workflows.SearchAttrTurnID,
			workflows.SearchAttrToolName, workflows.SearchAttrAssignmentStatus} {
			updates = append(updates, key.ValueSet("bench"))
		}
		if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
			return "", err
		}
	}
	return padding(s.Result - 2), nil
}

// BarePayloadShapeWorkflowName is BarePayloadShapeWorkflow's registered
// name.
const BarePayloadShapeWorkflowName = "BenchBarePayloadShapeWorkflow"

func registerPayloadShape(w worker.Worker) {
	w.RegisterWorkflowWithOptions(BarePayloadShapeWorkflow, workflow.RegisterOptions{Name: BarePayloadShapeWorkflowName})
	w.RegisterActivityWithOptions(Payload, activity.RegisterOptions{Name: "Payload"})
	w.RegisterActivityWithOptions(PayloadFor, activity.RegisterOptions{Name: "PayloadFor"})
	w.RegisterActivityWithOptions(ShTrueFor, activity.RegisterOptions{Name: "ShTrueFor"})
}

// Payload returns n bytes.
func Payload(_ context.Context, n int) (string, error) { return padding(n), nil }

// PayloadFor takes its input and returns n bytes.
func PayloadFor(_ context.Context, _ string, n int) (string, error) { return padding(n), nil }

// ShTrueFor is ShTrue taking its input and returning n bytes.
func ShTrueFor(ctx context.Context, _ string, n int) (string, error) {
	return padding(n), ShTrue(ctx)
}

func padding(n int) string { return strings.Repeat("x", max(n, 0)) }

// ShapeFloor runs BareShapeWorkflow with shape's steps to its end.
func ShapeFloor(shape string) func(context.Context, client.Client) (client.WorkflowRun, error) {
	return runBare("bench-shape", BareShapeWorkflowName, shape)
}

// PayloadShapeFloor runs BarePayloadShapeWorkflow for s to its end, with
// an input as large as the Fenix run's.
func PayloadShapeFloor(s Shape) func(context.Context, client.Client) (client.WorkflowRun, error) {
	in := PayloadShapeInput{Shape: s}
	if raw, err := json.Marshal(in); err == nil {
		in.Padding = padding(s.Input - len(raw) - len(`,"padding":""`))
	}
	return runBare("bench-payload-shape", BarePayloadShapeWorkflowName, in)
}
