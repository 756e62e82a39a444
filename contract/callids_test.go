package contract

import (
	"reflect"
	"testing"
)

func TestUniqueCallIDs(t *testing.T) {
	ids := func(calls []ToolCall) []string {
		out := make([]string, len(calls))
		for i, c := range calls {
			out[i] = c.CallID
		}
		return out
	}
	tests := []struct {
		in      []string
		want    []string
		renamed int
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, 0},
		{[]string{"a", "a"}, []string{"a", "a#2"}, 1},
		{[]string{"a", "a", "a"}, []string{"a", "a#2", "a#3"}, 2},
		{[]string{"a", "a#2", "a"}, []string{"a", "a#2", "a#3"}, 1},
		{[]string{"", "", "x"}, []string{"", "", "x"}, 0},
	}
	for _, tt := range tests {
		calls := make([]ToolCall, len(tt.in))
		for i, id := range tt.in {
			calls[i] = ToolCall{CallID: id}
		}
		renames := UniqueCallIDs(calls)
		if got := ids(calls); !reflect.DeepEqual(got, tt.want) || len(renames) != tt.renamed {
			t.Errorf("UniqueCallIDs(%q) = %q with %d renames, want %q with %d", tt.in, got, len(renames), tt.want, tt.renamed)
		}
	}
}

func TestRenameReusedCallIDs(t *testing.T) {
	used := map[string]bool{}
	step1 := []ToolCall{{CallID: "call_0"}, {CallID: "call_1"}}
	if r := RenameReusedCallIDs(step1, used); len(r) != 0 {
		t.Fatalf("first answer renamed: %+v", r)
	}
	// The model numbers its calls per answer again; it also names one
	// like the rename of another would be.
	step2 := []ToolCall{{CallID: "call_0"}, {CallID: "call_0#2"}, {CallID: "call_1"}}
	r := RenameReusedCallIDs(step2, used)
	got := []string{step2[0].CallID, step2[1].CallID, step2[2].CallID}
	want := []string{"call_0#3", "call_0#2", "call_1#2"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("IDs = %v, want %v", got, want)
		}
	}
	if len(r) != 2 || r[0] != (CallIDRename{Index: 0, From: "call_0", To: "call_0#3"}) || r[1] != (CallIDRename{Index: 2, From: "call_1", To: "call_1#2"}) {
		t.Fatalf("renames = %+v", r)
	}
	step3 := []ToolCall{{CallID: "call_0"}}
	RenameReusedCallIDs(step3, used)
	if step3[0].CallID != "call_0#4" {
		t.Fatalf("third use = %q, want call_0#4", step3[0].CallID)
	}
}
