package tools

import (
	"slices"
	"strings"
)

// commandPrelude is what runs in a command's shell before its line
// (procs.Spec.Prelude): the session's $CLAUDE_ENV_FILE lines, then the
// call's own env once more, so a variable the call names wins over the
// session's as it would over any inherited one.
func commandPrelude(session string, callEnv map[string]string) string {
	if session == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(session)
	if !strings.HasSuffix(session, "\n") {
		b.WriteByte('\n')
	}
	names := make([]string, 0, len(callEnv))
	for name := range callEnv {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		b.WriteString("export " + name + "=" + shellQuote(callEnv[name]) + "\n")
	}
	return b.String()
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
