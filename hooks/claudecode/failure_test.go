package claudecode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
)

// TestPostToolUseFailureOnlyForToolsThatRan: a Claude Code
// PostToolUseFailure hook hears of a tool that ran and failed, never of a
// call a hook blocked or a permission decision denied; a Fenix file's hook
// still hears of every attempted call (the audit trail).
func TestPostToolUseFailureOnlyForToolsThatRan(t *testing.T) {
	for _, tc := range []struct {
		errType       string
		claude, fenix bool
	}{
		{fenixerr.TypeRuntime, true, true},
		{fenixerr.TypeToolTimeout, true, true},
		{fenixerr.TypeToolBlocked, false, true},
		{fenixerr.TypePermissionDenied, false, true},
		{fenixerr.TypeHookHalt, false, true},
	} {
		t.Run(tc.errType, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "fired.log")
			hook := func(name string, d Dialect) *ExternalHook {
				return newCommandHook(t, cmdHook{Event: "PostToolUseFailure", Dialect: d,
					Command: writeScript(t, dir, name+".sh", `cat >/dev/null; echo `+name+` >>`+log)})
			}
			cc, fx := hook("claude", DialectClaude), hook("fenix", DialectFenix)
			registryOf(cc, fx).RunPostToolUseFailure(context.Background(), hooks.PostToolUseFailureEvent{
				Session: hooks.Session{WorkspaceRoot: dir}, ToolName: "exec_command", CallID: "c1",
				ToolInput: map[string]any{"command_line": "false"}, ErrorType: tc.errType, ErrorMessage: "boom"})
			data, _ := os.ReadFile(log)
			fired := string(data)
			if got := strings.Contains(fired, "claude"); got != tc.claude {
				t.Errorf("claude hook fired = %v, want %v (log %q)", got, tc.claude, fired)
			}
			if got := strings.Contains(fired, "fenix"); got != tc.fenix {
				t.Errorf("fenix hook fired = %v, want %v (log %q)", got, tc.fenix, fired)
			}
		})
	}
}
