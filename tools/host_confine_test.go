package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/fenixerr"
)

// A sandbox that cannot be applied (here: confinement off) runs commands
// unsandboxed, as Claude Code does, unless a settings file asked for
// failIfUnavailable: then exec_command and process_exec are refused with
// a ToolUnavailableError naming the file, and run again once the sandbox
// is dropped.
func TestSandboxThatCannotBeAppliedRefusesCommandsWhenAskedTo(t *testing.T) {
	r := newRig(t, func(c *HostConfig) { c.Confinement = confine.ModeOff })
	sandbox := confine.Policy{Boundary: &confine.Boundary{}}
	if err := r.host.SetCommandSandbox(sandbox, true, []string{"/p/.claude/settings.json"}); err != nil {
		t.Fatal(err)
	}
	for tool, args := range map[string]map[string]any{
		"exec_command": {"command_line": "echo x > ran.txt"},
		"process_exec": {"command_line": "echo x > ran.txt"},
	} {
		_, _, err := r.call(t, tool, args)
		var fe *fenixerr.Error
		if !errors.As(err, &fe) || fe.Type != fenixerr.TypeToolUnavailable || fe.Code != "sandbox_unavailable" {
			t.Fatalf("%s: got %v, want ToolUnavailableError sandbox_unavailable", tool, err)
		}
		if !strings.Contains(fe.Message, "/p/.claude/settings.json") {
			t.Errorf("%s: the refusal does not name the settings file: %s", tool, fe.Message)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "ran.txt")); err == nil {
		t.Fatal("a refused command ran")
	}
	if err := r.host.SetCommandSandbox(sandbox, false, []string{"/p/.claude/settings.json"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.call(t, "exec_command", map[string]any{"command_line": "echo x > ran.txt"}); err != nil {
		t.Fatalf("without failIfUnavailable the command runs unsandboxed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "ran.txt")); err != nil {
		t.Fatal(err)
	}
}
