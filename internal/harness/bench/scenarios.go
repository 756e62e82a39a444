package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/agent/llm/scripted"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// Scenario names. A Fenix scenario's floor is the bare workflow doing the
// round trips that scenario cannot avoid: none for a calculator call, the
// command's activity for exec_command, the two model calls of a two-step
// agent turn.
const (
	ScenarioBare0             = "bare workflow, no activity"
	ScenarioBare1             = "bare workflow, 1 activity"
	ScenarioBare2             = "bare workflow, 2 activities"
	scenarioBareN             = "bare workflow, %d activities"
	ScenarioCalculatorFast    = "fenix calculator (fast)"
	ScenarioCalculatorRegular = "fenix calculator (regular)"
	ScenarioExecFast          = "fenix exec_command true (fast)"
	ScenarioExecRegular       = "fenix exec_command true (regular)"
	ScenarioAgentTurnFast     = "fenix AgentTurn, 2 steps, 1 tool (fast)"
	ScenarioAgentTurnRegular  = "fenix AgentTurn, 2 steps, 1 tool (regular)"
)

const (
	agentScript      = "bench"
	calculatorAnswer = "The calculator returned 4."
	agentAnswer      = "2 + 2 = 4."
	runTimeout       = 2 * time.Minute
	stagesFast       = contract.StagesFast
	stagesRegular    = contract.StagesRegular
)

type scenario struct {
	name string
	// floor names the bare scenario this one is compared with.
	floor string
	// shapeFloor names the bare workflow with this scenario's own
	// activities (BareShapeWorkflow), if any; payloadFloor the same
	// carrying its payloads (BarePayloadShapeWorkflow).
	shapeFloor, payloadFloor string
	run                      func(ctx context.Context, c client.Client) (client.WorkflowRun, error)
}

// allScenarios lists the scenarios in report order; regularActivities is
// the regular calculator's activity count, for its same-count bare run,
// and shapes the fast scenarios' shapes (fastShapes).
func allScenarios(regularActivities int, shapes map[string]Shape) []scenario {
	bareN := fmt.Sprintf(scenarioBareN, regularActivities)
	out := []scenario{
		{name: ScenarioBare0, run: bare(0)},
		{name: ScenarioBare1, run: bare(1)},
		{name: ScenarioBare2, run: bare(2)},
		{name: bareN, run: bare(regularActivities)},
	}
	shapeFloor, payloadFloor := map[string]string{}, map[string]string{}
	for _, name := range []string{ScenarioCalculatorFast, ScenarioExecFast, ScenarioAgentTurnFast} {
		shape, ok := shapes[name]
		if !ok {
			continue
		}
		shapeFloor[name] = fmt.Sprintf(scenarioBareShape, shape.Steps)
		if !slices.ContainsFunc(out, func(sc scenario) bool { return sc.name == shapeFloor[name] }) {
			out = append(out, scenario{name: shapeFloor[name], run: ShapeFloor(shape.Steps)})
		}
		payloadFloor[name] = fmt.Sprintf(scenarioPayloadShape, shape.Steps, shape.bytes())
		out = append(out, scenario{name: payloadFloor[name], run: PayloadShapeFloor(shape)})
	}
	fast := func(name, floor string, run func(context.Context, client.Client) (client.WorkflowRun, error)) scenario {
		return scenario{name: name, floor: floor, shapeFloor: shapeFloor[name], payloadFloor: payloadFloor[name], run: run}
	}
	return append(out,
		fast(ScenarioCalculatorFast, ScenarioBare0, assignment(calculatorCall(), stagesFast, calculatorAnswer)),
		scenario{name: ScenarioCalculatorRegular, floor: ScenarioBare0, run: assignment(calculatorCall(), stagesRegular, calculatorAnswer)},
		fast(ScenarioExecFast, ScenarioBare1, assignment(execCall(), stagesFast, "")),
		scenario{name: ScenarioExecRegular, floor: ScenarioBare1, run: assignment(execCall(), stagesRegular, "")},
		fast(ScenarioAgentTurnFast, ScenarioBare2, agentTurn(stagesFast)),
		scenario{name: ScenarioAgentTurnRegular, floor: ScenarioBare2, run: agentTurn(stagesRegular)},
	)
}

// Names of the shape floors' scenarios.
const (
	scenarioBareShape    = "bare workflow shaped %s"
	scenarioPayloadShape = "bare workflow shaped %s carrying %.1f KB"
)

// fastShapes runs each fast scenario once and reads its shape (ShapeOf);
// exec_command's regular activity is the command, X in the shape floor.
func fastShapes(ctx context.Context, c client.Client) (map[string]Shape, error) {
	shapes := map[string]Shape{}
	for _, sc := range allScenarios(0, nil) {
		if sc.name != ScenarioCalculatorFast && sc.name != ScenarioExecFast && sc.name != ScenarioAgentTurnFast {
			continue
		}
		run, err := sc.run(ctx, c)
		if err != nil {
			return nil, err
		}
		regular := shapeActivity
		if sc.name == ScenarioExecFast {
			regular = ShapeShTrue
		}
		if shapes[sc.name], err = ShapeOf(ctx, c, run.GetID(), run.GetRunID(), regular); err != nil {
			return nil, err
		}
	}
	return shapes, nil
}

// selectScenarios keeps the matching scenarios and the floors they need.
func selectScenarios(all []scenario, only *regexp.Regexp) []scenario {
	if only == nil {
		return all
	}
	keep := map[string]bool{}
	for _, sc := range all {
		if only.MatchString(sc.name) {
			keep[sc.name] = true
			if sc.floor != "" {
				keep[sc.floor] = true
			}
			if sc.shapeFloor != "" {
				keep[sc.shapeFloor] = true
			}
			if sc.payloadFloor != "" {
				keep[sc.payloadFloor] = true
			}
		}
	}
	var out []scenario
	for _, sc := range all {
		if keep[sc.name] {
			out = append(out, sc)
		}
	}
	return out
}

var runSeq atomic.Int64

func nextID(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), runSeq.Add(1))
}

func bare(activities int) func(context.Context, client.Client) (client.WorkflowRun, error) {
	return runBare("bench-bare", BareWorkflowName, activities)
}

// runBare runs a floor workflow on BareQueue to its end.
func runBare(prefix, workflowName string, arg any) func(context.Context, client.Client) (client.WorkflowRun, error) {
	return func(ctx context.Context, c client.Client) (client.WorkflowRun, error) {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: nextID(prefix), TaskQueue: BareQueue}, workflowName, arg)
		if err != nil {
			return nil, err
		}
		return run, run.Get(ctx, nil)
	}
}

func calculatorCall() map[string]any {
	return map[string]any{"tool_name": "calculator", "arguments": map[string]any{"expression": "2 + 2"}}
}

func execCall() map[string]any {
	return map[string]any{"tool_name": "exec_command", "arguments": map[string]any{"command_line": "true"}}
}

func baseAssignment(id string, allowed ...string) map[string]any {
	return map[string]any{
		"logical_work_id": id, "attempt_no": 1, "conversation_id": "conv-bench", "turn_id": id,
		"context_messages": []map[string]any{{"role": "user", "content": "What is 2 + 2?"}},
		"agent_context":    map[string]any{"profile": "bench", "allowed_tool_names": allowed},
	}
}

// assignment runs one governed tool call; want, when set, is the output
// the call must produce.
func assignment(call map[string]any, stages, want string) func(context.Context, client.Client) (client.WorkflowRun, error) {
	return func(ctx context.Context, c client.Client) (client.WorkflowRun, error) {
		id := nextID("bench-assignment")
		a := baseAssignment(id, call["tool_name"].(string))
		a["tool_call"] = call
		a["execution"] = map[string]any{"stages": stages}
		return runFenix(ctx, c, workflows.ExecuteAssignmentWorkflow, id, a, want)
	}
}

// agentTurn is two model calls with one calculator call between them.
func agentTurn(stages string) func(context.Context, client.Client) (client.WorkflowRun, error) {
	return func(ctx context.Context, c client.Client) (client.WorkflowRun, error) {
		id := nextID("bench-agent")
		a := baseAssignment(id, "calculator")
		a["model_context"] = map[string]any{"likely_model": "scripted:" + agentScript}
		a["execution"] = map[string]any{"stages": stages}
		a["max_steps"] = 4
		return runFenix(ctx, c, workflows.AgentTurnWorkflow, id, a, agentAnswer)
	}
}

func runFenix(ctx context.Context, c client.Client, workflowType, id string, input map[string]any, want string) (client.WorkflowRun, error) {
	run, res, err := runFenixOn(ctx, c, workflows.DefaultTaskQueue, workflowType, id, input)
	if err != nil {
		return run, err
	}
	if want != "" && res.Output.Content != want {
		return run, fmt.Errorf("%s %s answered %q, want %q", workflowType, id, res.Output.Content, want)
	}
	return run, nil
}

// runFenixOn runs one Fenix workflow on queue to a completed result.
func runFenixOn(ctx context.Context, c client.Client, queue, workflowType, id string, input map[string]any) (client.WorkflowRun, contract.Result, error) {
	var res contract.Result
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, res, err
	}
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	// Started as Fenix's starters start runs: with the search attributes
	// the run would upsert first (workflows.StartWorkflow).
	run, err := workflows.StartWorkflowJSON(ctx, c, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, workflowType, raw)
	if err != nil {
		return nil, res, err
	}
	if err := run.Get(ctx, &res); err != nil {
		return run, res, err
	}
	if res.Status != contract.StatusCompleted || res.Output == nil {
		return run, res, fmt.Errorf("%s %s ended %s: %+v", workflowType, id, res.Status, res.Error)
	}
	return run, res, nil
}

// scriptedModel answers the bench agent turn: a calculator call, then the
// answer.
func scriptedModel() (*scripted.Provider, error) {
	return scripted.New(map[string]scripted.Script{agentScript: {Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{ToolName: "calculator", Arguments: map[string]any{"expression": "2 + 2"}}}},
		{Content: agentAnswer},
	}}})
}

// countActivities runs one scenario and counts its regular activities.
func countActivities(ctx context.Context, c client.Client, name string) (int, error) {
	for _, sc := range allScenarios(0, nil) {
		if sc.name != name {
			continue
		}
		run, err := sc.run(ctx, c)
		if err != nil {
			return 0, err
		}
		n := 0
		err = eachEvent(ctx, c, run, func(e *historypb.HistoryEvent) {
			if e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
				n++
			}
		})
		return n, err
	}
	return 0, fmt.Errorf("no scenario %q", name)
}

// historyStats describes one recorded run.
type historyStats struct {
	events, bytes int
	// tasks counts workflow tasks; inTask is the time the worker held
	// them (WorkflowTaskStarted to Completed, summed): where local stages
	// run and where the worker's own overhead shows, apart from the
	// server's dispatch and persistence.
	tasks  int
	inTask time.Duration
}

func historyOf(ctx context.Context, c client.Client, run client.WorkflowRun) (historyStats, error) {
	var st historyStats
	var taskStarted time.Time
	err := eachEvent(ctx, c, run, func(e *historypb.HistoryEvent) {
		st.events++
		st.bytes += e.Size()
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			taskStarted = e.GetEventTime().AsTime()
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			st.tasks++
			st.inTask += e.GetEventTime().AsTime().Sub(taskStarted)
		}
	})
	return st, err
}

// outlierFactor is how many times the p50 a run must take for its history
// to be described: the dev server is stopped after the bench, so an
// outlier is looked at while it can be.
const outlierFactor = 10

// describeSlowest says where an outlier run spent its time: the run's
// IDs, its time in history (first to last event) against the client's
// wait, and the longest gap between two events.
func describeSlowest(ctx context.Context, c client.Client, run client.WorkflowRun, took time.Duration) string {
	var events []*historypb.HistoryEvent
	if err := eachEvent(ctx, c, run, func(e *historypb.HistoryEvent) { events = append(events, e) }); err != nil {
		return fmt.Sprintf("%s/%s took %s; its history: %v", run.GetID(), run.GetRunID(), took.Round(time.Millisecond), err)
	}
	return fmt.Sprintf("%s/%s took %s, %s", run.GetID(), run.GetRunID(), took.Round(time.Millisecond), longestWait(events))
}

// longestWait says how long a history spans and between which two
// events it waited longest.
func longestWait(events []*historypb.HistoryEvent) string {
	if len(events) == 0 {
		return "no history"
	}
	name := func(e *historypb.HistoryEvent) string { return fmt.Sprintf("%d %s", e.GetEventId(), e.GetEventType()) }
	var gap time.Duration
	var before, after string
	for i := 1; i < len(events); i++ {
		if d := events[i].GetEventTime().AsTime().Sub(events[i-1].GetEventTime().AsTime()); d > gap {
			gap, before, after = d, name(events[i-1]), name(events[i])
		}
	}
	span := events[len(events)-1].GetEventTime().AsTime().Sub(events[0].GetEventTime().AsTime())
	if before == "" {
		return fmt.Sprintf("%s of it in history", span.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s of it in history; its longest wait, %s, is between events %s and %s",
		span.Round(time.Millisecond), gap.Round(time.Millisecond), before, after)
}

func eachEvent(ctx context.Context, c client.Client, run client.WorkflowRun, fn func(*historypb.HistoryEvent)) error {
	iter := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			return err
		}
		fn(e)
	}
	return nil
}
