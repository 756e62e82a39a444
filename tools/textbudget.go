package tools

import "unicode/utf8"

// Result texts are clipped so a tool result stays under the activity's
// result limit (1 MiB) even after JSON escaping, which can grow a control
// character to six bytes.
const (
	// resultTextBudget bounds one large text field of a result, encoded.
	resultTextBudget = 640 << 10
)

// jsonSize is the encoded size of s as a JSON string body, as Define
// marshals it (no HTML escaping).
func jsonSize(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n += asciiJSONSize(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += 6 // \ufffd
		} else if r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

func asciiJSONSize(c byte) int {
	switch {
	case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
		return 2
	case c < 0x20:
		return 6
	default:
		return 1
	}
}

// clipForJSON returns the longest prefix of s, cut at a character
// boundary, whose JSON encoding fits budget, and whether it cut anything.
func clipForJSON(s string, budget int) (string, bool) {
	if len(s) <= budget/6 || jsonSize(s) <= budget {
		return s, false
	}
	n := 0
	for i, r := range s {
		size := utf8.RuneLen(r)
		cost := size
		switch {
		case r < utf8.RuneSelf:
			cost = asciiJSONSize(byte(r))
		case r == utf8.RuneError, r == '\u2028', r == '\u2029':
			cost = 6
		}
		if n+cost > budget {
			return s[:i], true
		}
		n += cost
	}
	return s, false
}
