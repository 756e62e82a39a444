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
