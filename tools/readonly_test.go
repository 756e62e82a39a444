package tools_test

import (
	"testing"

	"github.com/fenixrt/fenix/tools"
)

// Plan mode runs only tools marked ReadOnly, so every built-in tool is
// classified here: a new one fails until someone decides whether it only
// reads.
func TestBuiltinToolsSayWhetherTheyOnlyRead(t *testing.T) {
	readOnly := map[string]bool{
		"workspace_read": true, "workspace_list": true, "workspace_search": true,
		"calculator": true, "memory_read": true, "memory_list": true,
		"process_list": true, "command_run_read": true,
		"web_fetch": true, "web_search": true,
		"browser_snapshot": true, "browser_screenshot": true, "browser_list": true,

		"workspace_write": false, "workspace_edit": false, "memory_write": false,
		"exec_command": false, "process_exec": false, "process_stop": false,
		"browser_open": false, "browser_navigate": false, "browser_click": false, "browser_type": false, "browser_close": false,
	}
	for _, d := range tools.Builtin().Descriptors() {
		want, known := readOnly[d.Name]
		if !known {
			t.Errorf("built-in tool %q is not classified: add it to this test as read-only or not", d.Name)
			continue
		}
		if d.ReadOnly != want {
			t.Errorf("tool %q: ReadOnly = %v, want %v", d.Name, d.ReadOnly, want)
		}
	}
}
