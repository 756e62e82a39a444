package claudecode

import (
	"fmt"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
)

// matcherTimeout bounds one regular-expression match, so a pathological
// pattern cannot stall a hook stage (subjects are short names).
const matcherTimeout = 100 * time.Millisecond

// Matcher is a settings-file matcher with Claude Code's semantics:
//
//   - "", "*" or an absent matcher match everything;
//   - a matcher of only letters, digits, "_", spaces, "," and "|" is an
//     exact string, or a list of exact strings separated by "|" or ","
//     with optional whitespace around each ("Edit|Write", "Edit, Write");
//   - anything else is an unanchored JavaScript regular expression
//     ("^Notebook", "mcp__memory__.*"), evaluated with ECMAScript rules.
//
// Matching is case-sensitive, as in Claude Code.
type Matcher struct {
	text  string
	all   bool
	exact []string
	re    *regexp2.Regexp
}

// CompileMatcher parses a matcher. Only a regular expression can fail.
func CompileMatcher(text string) (Matcher, error) {
	m := Matcher{text: text}
	trimmed := strings.TrimSpace(text)
	if trimmed == "" || trimmed == "*" {
		m.all = true
		return m, nil
	}
	if isExactList(trimmed) {
		for _, part := range strings.FieldsFunc(trimmed, func(r rune) bool { return r == '|' || r == ',' }) {
			if p := strings.TrimSpace(part); p != "" {
				m.exact = append(m.exact, p)
			}
		}
		return m, nil
	}
	re, err := regexp2.Compile(text, regexp2.ECMAScript)
	if err != nil {
		return Matcher{}, fmt.Errorf("matcher %q is not a valid JavaScript regular expression: %w", text, err)
	}
	re.MatchTimeout = matcherTimeout
	m.re = re
	return m, nil
}

func isExactList(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case r == '_', r == ' ', r == ',', r == '|', r == '\t':
		default:
			return false
		}
	}
	return true
}

// MatchesAll reports whether the matcher matches every subject.
func (m Matcher) MatchesAll() bool { return m.all }

// String is the matcher as written.
func (m Matcher) String() string { return m.text }

// Match reports whether any of the subject's names matches. A tool may
// have several names (its Claude Code aliases); one match is enough.
func (m Matcher) Match(names ...string) bool {
	if m.all {
		return true
	}
	for _, name := range names {
		if m.re != nil {
			// A timeout counts as a match: running a guard is the safe
			// side of a matcher that could not be evaluated.
			if ok, err := m.re.MatchString(name); ok || err != nil {
				return true
			}
			continue
		}
		for _, e := range m.exact {
			if e == name {
				return true
			}
		}
	}
	return false
}
