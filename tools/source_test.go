package tools_test

import (
	"testing"

	"github.com/fenixrt/fenix/tools"
)

func TestNameAllowedFollowsClaudeCodeMCPRules(t *testing.T) {
	cases := []struct {
		allowed []string
		name    string
		want    bool
	}{
		{[]string{"calculator"}, "calculator", true},
		{[]string{"mcp__memory"}, "mcp__memory__read_graph", true},
		{[]string{"mcp__memory__*"}, "mcp__memory__read_graph", true},
		{[]string{"mcp__memory__read_graph"}, "mcp__memory__read_graph", true},
		{[]string{"mcp__memory__read_graph"}, "mcp__memory__delete_entities", false},
		{[]string{"mcp__memory"}, "mcp__memoryx__read_graph", false},
		{[]string{"mcp__mem"}, "mcp__memory__read_graph", false},
		{[]string{"mcp__memory__read"}, "mcp__memory__read__graph", false},
		{[]string{"calc"}, "calculator", false},
		{nil, "mcp__memory__read_graph", false},
		{[]string{"mcp__*"}, "mcp__memory__read_graph", true},
		{[]string{"mcp__*"}, "calculator", false},
	}
	for _, c := range cases {
		if got := tools.NameAllowed(c.allowed, c.name); got != c.want {
			t.Errorf("NameAllowed(%q, %q) = %v, want %v", c.allowed, c.name, got, c.want)
		}
	}
}
