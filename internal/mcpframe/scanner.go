package mcpframe

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// scanner follows a JSON object byte by byte and keeps the raw values of
// its top-level "id" and "method" (up to maxValue bytes each) and whether
// it has "result" or "error". It holds nothing else of the message.
type scanner struct {
	bad, started, done bool
	depth              int
	inString, escaped  bool
	inKey, expectKey   bool
	key                []byte
	keyLong            bool
	lastKey            string
	capturing          string
	value              []byte
	valueLong          bool
	id, method         []byte
	hasResult          bool
	// idSeen: the message has a top-level "id" that is not null (id is
	// nil when it was over maxValue bytes).
	idSeen bool
}

const (
	maxKey   = 16
	maxValue = 256
)

func (s *scanner) feed(b []byte) {
	for _, c := range b {
		if s.bad || s.done {
			return
		}
		s.step(c)
	}
}

func (s *scanner) step(c byte) {
	if s.inString {
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
			if s.inKey {
				s.inKey = false
				s.lastKey = string(s.key)
				if s.keyLong {
					s.lastKey = ""
				}
				return
			}
		}
		s.record(c)
		return
	}
	switch c {
	case ' ', '\t', '\r', '\n':
		return
	}
	if !s.started {
		if c != '{' {
			s.bad = true // a batch, or not JSON: nothing to recover
			return
		}
		s.started, s.depth, s.expectKey = true, 1, true
		return
	}
	switch {
	case c == '"' && s.depth == 1 && s.expectKey:
		s.inString, s.inKey, s.key, s.keyLong = true, true, s.key[:0], false
	case c == '"':
		s.inString = true
		s.record(c)
	case c == '{' || c == '[':
		s.record(c)
		s.depth++
	case (c == '}' || c == ']') && s.depth == 1:
		s.endValue()
		s.done = true
	case c == '}' || c == ']':
		s.depth--
		s.record(c)
	case c == ':' && s.depth == 1:
		s.expectKey = false
		switch s.lastKey {
		case "id", "method":
			s.capturing, s.value, s.valueLong = s.lastKey, s.value[:0], false
		case "result", "error":
			s.hasResult = true
		}
	case c == ',' && s.depth == 1:
		s.endValue()
		s.expectKey = true
	default:
		s.record(c)
	}
}

func (s *scanner) record(c byte) {
	switch {
	case s.inKey:
		if len(s.key) < maxKey {
			s.key = append(s.key, c)
		} else {
			s.keyLong = true
		}
	case s.capturing != "":
		if len(s.value) < maxValue {
			s.value = append(s.value, c)
		} else {
			s.valueLong = true
		}
	}
}

func (s *scanner) endValue() {
	if s.capturing == "" {
		return
	}
	v := append([]byte(nil), s.value...)
	if s.valueLong {
		v = nil
	}
	if s.capturing == "id" {
		s.id = v
		s.idSeen = s.valueLong || string(v) != "null"
	} else {
		s.method = v
	}
	s.capturing = ""
}

func (s *scanner) result() Dropped {
	var o Dropped
	if len(s.id) > 0 {
		var v any
		if json.Unmarshal(s.id, &v) == nil {
			if id, err := jsonrpc.MakeID(v); err == nil {
				o.ID = id
			}
		}
	}
	if len(s.method) > 0 {
		_ = json.Unmarshal(s.method, &o.Method)
	}
	o.Response = o.Method == "" && s.hasResult
	o.UnreadableID = s.idSeen && !o.ID.IsValid()
	return o
}
