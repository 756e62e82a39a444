package claudecode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/workspace"
)

// A JavaScript guard's node_modules is linked into its pinned copy, not
// copied (the load warns): the hook loads its packages from the
// project. Outside .claude/ (tools/hooks/guard.js) the file tools could
// write them, and the next hook run imported the agent's code in the
// guard's place. The linked package directories are protected like the
// scripts.
func TestLinkedHookPackagesAreNotWritableByTools(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	hooksDir := filepath.Join(project, "tools", "hooks")
	pkg := filepath.Join(hooksDir, "node_modules", "denylist")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, body := range map[string]string{
		filepath.Join(pkg, "index.js"):      "module.exports = ['rm'];\n",
		filepath.Join(hooksDir, "guard.js"): "const deny = require('denylist');\n",
		filepath.Join(project, "README.md"): "# project\n",
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, src, _ := loadGuardCommand(t, project, `node \"$CLAUDE_PROJECT_DIR\"/tools/hooks/guard.js`)
	if !strings.Contains(strings.Join(src.Warnings, "\n"), filepath.Join(hooksDir, "node_modules")+" is linked into the pinned copy") {
		t.Fatalf("warnings %q, want one naming the linked node_modules", src.Warnings)
	}
	ws, err := workspace.Open(project)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.Protect(r.ProtectedPaths())
	for _, rel := range []string{"tools/hooks/node_modules/denylist/index.js", "tools/hooks/node_modules/other/index.js", "tools/hooks/guard.js"} {
		_, err := ws.WriteFile(rel, []byte("module.exports = [];\n"), 0)
		if err == nil || fenixerr.As(err).Code != "protected_path" {
			t.Errorf("write %s = %v, want protected_path", rel, err)
		}
	}
	if _, err := ws.WriteFile("README.md", []byte("# changed\n"), 0); err != nil {
		t.Errorf("write README.md: %v", err)
	}
}
