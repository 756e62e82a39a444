package approvals

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fenixrt/fenix/contract"
)

// Summarize renders arguments on one line, keys sorted, as
// key=value pairs (strings quoted, objects as compact JSON), cut to at
// most maxRunes runes with "…". Keys and values are Printable: the
// summary is what a person approves.
func Summarize(args map[string]any, maxRunes int) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, contract.Printable(k)+"="+contract.Printable(summaryValue(args[k])))
	}
	return cutRunes(strings.Join(parts, " "), maxRunes)
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
