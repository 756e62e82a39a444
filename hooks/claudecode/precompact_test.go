package claudecode

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fenixrt/fenix/hooks"
)

// A PreCompact hook refuses the compaction with exit 2 (its stderr the
// reason) or a JSON block (its reason); the refusal is its answer, not
// an error, and the first one names its hook.
func TestPreCompactHooksCanRefuseTheCompaction(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, body, want string }{
		{"exit2", `echo "keep it whole" >&2; exit 2`, `hook "exit2": keep it whole`},
		{"json", `echo '{"decision":"block","reason":"not now"}'`, `hook "json": not now`},
		{"allow", `exit 0`, ""},
	} {
		r := hooks.NewRegistry()
		r.Add(newCommandHook(t, cmdHook{Event: "PreCompact", Name: c.name, Command: writeScript(t, dir, c.name+".sh", c.body), Dialect: DialectClaude}))
		sum := r.RunPreCompact(context.Background(), hooks.PreCompactEvent{Session: hooks.Session{WorkspaceRoot: dir}, Trigger: hooks.CompactAuto})
		assert.NoError(t, sum.Err(), c.name)
		assert.Equal(t, c.want, sum.Blocked, c.name)
	}
}

// A PreCompact hook that fails closed (onFailure: block) and cannot run
// refuses the compaction, as it would refuse a tool call; one that fails
// open lets it run, with its error recorded.
func TestAFailClosedPreCompactHookThatFailsRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, failClosed := range []bool{true, false} {
		r := hooks.NewRegistry()
		r.Add(newCommandHook(t, cmdHook{Event: "PreCompact", Name: "keeper", Command: writeScript(t, dir, "crash.sh", `echo boom >&2; exit 1`), FailClosed: failClosed, Dialect: DialectClaude}))
		sum := r.RunPreCompact(context.Background(), hooks.PreCompactEvent{Session: hooks.Session{WorkspaceRoot: dir}, Trigger: hooks.CompactAuto})
		if failClosed {
			assert.Contains(t, sum.Blocked, `hook "keeper": it failed and fails closed`)
		} else {
			assert.Empty(t, sum.Blocked)
		}
	}
}
