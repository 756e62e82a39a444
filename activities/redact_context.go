package activities

import (
	"encoding/json"
	"fmt"

	"github.com/fenixrt/fenix/contract"
)

// redactMessages removes secrets (see redact.DefaultPatterns: AWS keys,
// sk-proj- keys, PEM blocks, DSN passwords...) from a conversation's
// message contents and tool-call arguments, before PrepareTurn records
// them in history or the context store and hands them to the model and
// the hooks' transcript files. msgs is not modified.
func (a *Activities) redactMessages(msgs []contract.Message) ([]contract.Message, int, error) {
	if a.Redactor == nil {
		return msgs, 0, nil
	}
	total := 0
	var out []contract.Message
	for i, m := range msgs {
		content, n := a.Redactor.String(m.Content)
		calls, callN, err := a.redactToolCalls(m.ToolCalls)
		if err != nil {
			return nil, 0, fmt.Errorf("message %d: %w", i, err)
		}
		if n+callN == 0 {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]contract.Message, 0, len(msgs)), msgs[:i]...)
		}
		m.Content, m.ToolCalls = content, calls
		out = append(out, m)
		total += n + callN
	}
	if out == nil {
		return msgs, 0, nil
	}
	return out, total, nil
}

func (a *Activities) redactToolCalls(calls []contract.ToolCall) ([]contract.ToolCall, int, error) {
	total := 0
	var out []contract.ToolCall
	for i, c := range calls {
		raw, err := json.Marshal(c.Arguments)
		if err != nil {
			return nil, 0, fmt.Errorf("tool call %q arguments: %w", c.CallID, err)
		}
		red, n, err := a.Redactor.JSON(raw)
		if err != nil || n == 0 {
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		var args map[string]any
		if err := json.Unmarshal(red, &args); err != nil {
			return nil, 0, fmt.Errorf("tool call %q arguments: %w", c.CallID, err)
		}
		if out == nil {
			out = append(make([]contract.ToolCall, 0, len(calls)), calls[:i]...)
		}
		c.Arguments = args
		out = append(out, c)
		total += n
	}
	if out == nil {
		return calls, 0, nil
	}
	return out, total, nil
}
