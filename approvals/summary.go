package approvals

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fenixrt/fenix/contract"
)

// Summarize renders arguments on one line, keys sorted, as
// key=value pairs (strings quoted, objects as compact JSON), cut to at
// most maxRunes runes with "…". Keys and values are Printable: the
// summary is what a person approves.
func Summarize(args map[string]any, maxRunes int) string {
	s, _ := summarize(args, maxRunes)
	return s
}

// minBlankRun is the shortest run of blanks a summary shows as a count:
// an agent that pads a command with spaces pushes what follows past the
// cut, or off the right of the screen, while the person approves what is
// left in view.
const minBlankRun = 8

// summarize is Summarize, reporting whether it cut the line.
func summarize(args map[string]any, maxRunes int) (string, bool) {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, Readable(k)+"="+Readable(summaryValue(args[k])))
	}
	line := strings.Join(parts, " ")
	return cutRunes(line, maxRunes), utf8.RuneCountInString(line) > maxRunes
}

// Readable is s as a person deciding on it should see it: Printable, and
// each run of at least eight blanks shown as a count.
func Readable(s string) string { return countBlankRuns(contract.Printable(s)) }

// countBlankRuns shows each run of at least minBlankRun blanks (spaces
// and the other space separators, which look the same) as "⟨N blanks⟩".
func countBlankRuns(s string) string {
	var b strings.Builder
	run, start := 0, 0
	flush := func(end int) {
		if run >= minBlankRun {
			fmt.Fprintf(&b, "⟨%d blanks⟩", run)
		} else {
			b.WriteString(s[start:end])
		}
		run = 0
	}
	for i, r := range s {
		if unicode.Is(unicode.Zs, r) {
			if run == 0 {
				start = i
			}
			run++
			continue
		}
		if run > 0 {
			flush(i)
		}
		b.WriteRune(r)
	}
	if run > 0 {
		flush(len(s))
	}
	return b.String()
}

func summaryValue(v any) string {
	switch t := v.(type) {
	case string:
		return fmt.Sprintf("%q", t)
	case nil:
		return "null"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(raw)
}

func cutRunes(s string, maxRunes int) string {
	if utf8.RuneCountInString(s) <= maxRunes {
		return s
	}
	if maxRunes <= 1 {
		return "…"
	}
	r := []rune(s)
	return string(r[:maxRunes-1]) + "…"
}
