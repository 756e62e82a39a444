package contract

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseAssignment(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantErr string
		check   func(t *testing.T, a Assignment)
	}{
		{"minimal tool assignment gets defaults",
			`{"logical_work_id":"w","conversation_id":"c","turn_id":"t","tool_call":{"tool_name":"calculator"}}`, "",
			func(t *testing.T, a Assignment) {
				if a.AttemptNo != 1 || a.Mode != ModeTool || a.AgentContext.Profile != "main" {
					t.Errorf("defaults: attempt %d mode %q profile %q", a.AttemptNo, a.Mode, a.AgentContext.Profile)
				}
				if a.ToolCall.CallID != "tool-call-w-1" || a.ToolCall.Arguments == nil {
					t.Errorf("tool call defaults: %+v", a.ToolCall)
				}
			}},
		{"unknown top-level fields are tolerated", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","kernel_extra":{"x":1}}`, "", nil},
		{"empty input", `  `, "assignment is empty", nil},
		{"array", `[1]`, "not valid JSON for this contract", nil},
		{"wrong field type names the field", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","attempt_no":"x"}`, "field attempt_no must be int", nil},
		{"missing identity", `{}`, "missing required field(s): logical_work_id, conversation_id, turn_id", nil},
		{"negative attempt", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","attempt_no":-1}`, "attempt_no must be >= 1", nil},
		{"both inline and ref", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","context_ref":"r","context_messages":[{"role":"user","content":"x"}]}`, "both context_messages and context_ref", nil},
		{"execution stages fast", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","execution":{"stages":"fast"}}`, "", nil},
		{"unknown execution stages", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","execution":{"stages":"turbo"}}`, `execution.stages "turbo" is unknown: use "fast" or "regular"`, nil},
		{"stages and pure_stages together", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","execution":{"stages":"fast","pure_stages":"local"}}`, "send stages only", nil},
		{"message without role", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","context_messages":[{"content":"x"}]}`, "context_messages[0] has no role", nil},
		{"a permission mode", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","agent_context":{"permission_mode":"plan"}}`, "",
			func(t *testing.T, a Assignment) {
				if a.AgentContext.PermissionMode != "plan" {
					t.Errorf("permission mode %q", a.AgentContext.PermissionMode)
				}
			}},
		{"an unknown permission mode", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","agent_context":{"permission_mode":"yolo"}}`,
			`agent_context.permission_mode "yolo" is not a Claude Code permission mode`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseAssignment([]byte(tc.input))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.check != nil {
				tc.check(t, a)
			}
		})
	}
}

func TestValidateForExecution(t *testing.T) {
	base := Assignment{LogicalWorkID: "w", ConversationID: "c", TurnID: "t", AttemptNo: 1}
	tests := []struct {
		mode    string
		tool    *ToolCall
		skill   *SkillRequest
		wantErr string
	}{
		{ModeTool, nil, nil, "has no tool_call"},
		{ModeTool, &ToolCall{CallID: "x"}, nil, `tool_call "x" has no tool_name`},
		{ModeTool, &ToolCall{ToolName: "calculator"}, nil, ""},
		{ModeSkillsCatalogList, nil, nil, ""},
		{ModeSkillsLoad, nil, nil, "needs skill_request.skill_name"},
		{ModeSkillsLoad, nil, &SkillRequest{SkillName: "s"}, ""},
		{ModeSkillsReadFile, nil, &SkillRequest{SkillName: "s"}, "needs skill_request.relative_path"},
		{ModeSkillsInstall, nil, &SkillRequest{}, "needs skill_request.source_path"},
		{"dance", nil, nil, `mode "dance" is unknown`},
	}
	for _, tc := range tests {
		a := base
		a.Mode, a.ToolCall, a.SkillRequest = tc.mode, tc.tool, tc.skill
		err := a.ValidateForExecution()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("mode %q: got %v, want %q", tc.mode, err, tc.wantErr)
		}
	}
}

func TestInferModelFallbackChain(t *testing.T) {
	tests := []struct {
		mc   ModelContext
		pe   ProviderExecution
		want string
	}{
		{ModelContext{LikelyModel: "a", ModelRef: "b", APIModel: "c"}, ProviderExecution{ModelRef: "d"}, "a"},
		{ModelContext{ModelRef: "b", APIModel: "c"}, ProviderExecution{ModelRef: "d"}, "b"},
		{ModelContext{APIModel: "c"}, ProviderExecution{ModelRef: "d"}, "c"},
		{ModelContext{}, ProviderExecution{ModelRef: "d"}, "d"},
		{ModelContext{}, ProviderExecution{}, ""},
	}
	for _, tc := range tests {
		if got := (Assignment{ModelContext: tc.mc, ProviderExecution: tc.pe}).InferModel(); got != tc.want {
			t.Errorf("InferModel(%+v, %+v) = %q, want %q", tc.mc, tc.pe, got, tc.want)
		}
	}
}

func TestCompactionThresholdPrefersTheAdvisoryHint(t *testing.T) {
	tests := []struct {
		name string
		json string
		want int
	}{
		{"hint wins", `{"advisory_hints":{"recommended_compaction_threshold":10},"advisory_compaction_threshold_tokens":20}`, 10},
		{"explicit zero hint wins over tokens", `{"advisory_hints":{"recommended_compaction_threshold":0},"advisory_compaction_threshold_tokens":20}`, 0},
		{"tokens when no hint", `{"advisory_compaction_threshold_tokens":20}`, 20},
		{"neither", `{}`, 0},
	}
	for _, tc := range tests {
		var b BudgetHints
		if err := json.Unmarshal([]byte(tc.json), &b); err != nil {
			t.Fatal(err)
		}
		if got := b.CompactionThreshold(); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestTraceEntryMarshalsFlat(t *testing.T) {
	e := Trace("review_tool_call", "tool_name", "calculator", "registry_backed", false)
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(raw), `{"hook":"review_tool_call","registry_backed":false,"tool_name":"calculator"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	var back TraceEntry
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Hook != "review_tool_call" || back.Get("tool_name") != "calculator" || back.Get("hook") != nil {
		t.Errorf("round trip: %+v", back)
	}
}

// A kernel's OpenAI-shaped tool calls in its transcript read as calls
// (they decoded to calls with no ID, name or arguments), and an
// assignment refused for a missing field names the fields the contract
// does not know, so camelCase says what is wrong.
func TestOpenAIShapedToolCallsAndUnknownFields(t *testing.T) {
	a, err := ParseAssignment([]byte(`{"logical_work_id":"w","conversation_id":"c","turn_id":"t","context_messages":[
		{"role":"assistant","content":"","tool_calls":[{"id":"call_9","type":"function","function":{"name":"calculator","arguments":"{\"expression\":\"2+2\"}"}}]},
		{"role":"tool","tool_call_id":"call_9","content":"4"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := a.ContextMessages[0].ToolCalls
	want := []ToolCall{{CallID: "call_9", ToolName: "calculator", Arguments: map[string]any{"expression": "2+2"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tool calls = %+v, want %+v", got, want)
	}
	if _, err := ParseAssignment([]byte(`{"logical_work_id":"w","conversation_id":"c","turn_id":"t","context_messages":[
		{"role":"assistant","tool_calls":[{"id":"x","function":{"name":"calculator","arguments":"not json"}}]}]}`)); err == nil || !strings.Contains(err.Error(), "function.arguments") {
		t.Fatalf("arguments that are no JSON: err = %v, want them named", err)
	}
	_, err = ParseAssignment([]byte(`{"logicalWorkId":"w","conversationId":"c","turnId":"t"}`))
	if err == nil || !strings.Contains(err.Error(), "logicalWorkId, turnId") || !strings.Contains(err.Error(), "snake_case") {
		t.Fatalf("camelCase assignment: err = %v, want its unknown fields named", err)
	}
	for f, typ := range map[string]reflect.Type{"examples/calculator.json": reflect.TypeFor[Assignment](),
		"examples/agent_turn.json": reflect.TypeFor[AgentTurnRequest](), "examples/prepare_round.json": reflect.TypeFor[Assignment]()} {
		raw, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		if unknown := unknownFields(raw, typ); len(unknown) > 0 {
			t.Errorf("%s: fields the contract does not know: %v", f, unknown)
		}
	}
}
