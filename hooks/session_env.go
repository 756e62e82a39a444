package hooks

import (
	"fmt"
	"strings"
)

// A session environment is what Claude Code dialect SessionStart hooks
// wrote to $CLAUDE_ENV_FILE: shell lines (`export NODE_ENV=production`,
// an nvm or venv setup's exports) that every later exec_command and
// process_exec of the session runs in its shell before its command, as
// Claude Code sources the files before every Bash command. It travels in
// history with the stage that produced it and with each command, so it
// is bounded.

// MaxSessionEnvBytes bounds a session environment: one hook's file, and
// all of a session's together.
const MaxSessionEnvBytes = 64 << 10

// JoinSessionEnv appends one hook's lines to the environment so far, in
// hook order, as Claude Code concatenates the hooks' files.
func JoinSessionEnv(env, more string) (string, error) {
	switch {
	case more == "":
		return env, nil
	case env == "":
		env = more
	default:
		env = strings.TrimRight(env, "\n") + "\n" + more
	}
	if len(env) > MaxSessionEnvBytes {
		return "", fmt.Errorf("%d bytes of session environment, over the limit of %d", len(env), MaxSessionEnvBytes)
	}
	return env, nil
}

// SessionEnvWriter is implemented by hooks that may write a session
// environment on SessionStart (Claude Code dialect command hooks, which
// get $CLAUDE_ENV_FILE).
type SessionEnvWriter interface {
	WritesSessionEnv() bool
}

// WritesSessionEnv reports whether a SessionStart hook may write a
// session environment: a conversation's other runs then wait for it
// (ConversationSession) rather than start their commands without it.
func (r *Registry) WritesSessionEnv() bool {
	for _, e := range r.subscribers(EventSessionStart) {
		if w, ok := e.hook.(SessionEnvWriter); ok && w.WritesSessionEnv() {
			return true
		}
	}
	return false
}
