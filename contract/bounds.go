package contract

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"
)

// Bounds of what is repeated in reports and failure payloads. The result's
// output and the tool's own activity carry the full content once; the
// copies that reports, failures and markers would add stay small, so no
// payload nears Temporal's 2 MB blob or 4 MB gRPC message limits.
const (
	// EchoBytes bounds the JSON of tool arguments, response payloads and
	// output data repeated in a report or a failure.
	EchoBytes = 16 << 10
	// EchoStringBytes is what is kept of each long string inside a value
	// over EchoBytes.
	EchoStringBytes = 1 << 10
	// EchoDepth is how deep the copy of a value over EchoBytes follows
	// nested objects; what lies deeper is a note. Each level encodes what
	// is below it once, so an object nested 9,000 deep cost 9,000
	// encodings of ever smaller halves, seconds of workflow code: the
	// workflow task failed as a deadlock, again and again, and the run
	// never ended.
	EchoDepth = 8
)

// TruncateText keeps at most max bytes of s, cut at a rune boundary, and
// says how much was dropped.
func TruncateText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [truncated by Fenix: %d of %d bytes kept]", s[:cut], cut, len(s))
}

// BoundMap returns m when its JSON is at most max bytes; otherwise a copy
// whose long strings are truncated to EchoStringBytes and whose other
// large values are replaced by a note of their size. The copy does not
// depend on map iteration order (keys are visited sorted), so it is safe
// in workflow code.
//
//workflowcheck:ignore
func BoundMap(m map[string]any, max int) map[string]any {
	return boundMap(m, max, EchoDepth)
}

func boundMap(m map[string]any, max, depth int) map[string]any {
	raw, err := json.Marshal(m)
	if err == nil && len(raw) <= max {
		return m
	}
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch v := m[k].(type) {
		case string:
			out[k] = TruncateText(v, EchoStringBytes)
		case map[string]any:
			if depth <= 1 {
				out[k] = fmt.Sprintf("[object nested deeper than %d levels omitted by Fenix]", EchoDepth)
				continue
			}
			out[k] = boundMap(v, EchoStringBytes, depth-1)
		default:
			b, err := json.Marshal(v)
			if err != nil || len(b) > EchoStringBytes {
				out[k] = fmt.Sprintf("[value of %d bytes omitted by Fenix]", len(b))
			} else {
				out[k] = v
			}
		}
	}
	return out
}

// Bounded returns a copy of the invocation whose arguments and response
// payload are bounded.
func (inv ToolInvocation) Bounded() ToolInvocation {
	inv.RequestPayload.Arguments = BoundMap(inv.RequestPayload.Arguments, EchoBytes)
	if inv.ResponsePayload != nil {
		inv.ResponsePayload = BoundMap(inv.ResponsePayload, EchoBytes)
	}
	return inv
}

// Bounded returns a copy of the output with its content and data bounded.
func (o Output) Bounded() Output {
	o.Content = TruncateText(o.Content, EchoBytes)
	if o.Data != nil {
		o.Data = BoundMap(o.Data, EchoBytes)
	}
	return o
}

// Bounded returns a copy of the failure with its tool invocations bounded.
func (f Failure) Bounded() Failure {
	if len(f.ToolInvocations) > 0 {
		invs := make([]ToolInvocation, len(f.ToolInvocations))
		for i, inv := range f.ToolInvocations {
			invs[i] = inv.Bounded()
		}
		f.ToolInvocations = invs
	}
	f.LastErrorSummary = TruncateText(f.LastErrorSummary, EchoBytes)
	return f
}

// Bounded returns a copy of the report whose repeated content (the
// invocation, the output, the failure) is bounded. The result carries the
// output in full.
func (r Report) Bounded() Report {
	if r.ToolInvocation != nil {
		inv := r.ToolInvocation.Bounded()
		r.ToolInvocation = &inv
	}
	if r.Output != nil {
		out := r.Output.Bounded()
		r.Output = &out
	}
	if r.Error != nil {
		f := r.Error.Bounded()
		r.Error = &f
	}
	return r
}
