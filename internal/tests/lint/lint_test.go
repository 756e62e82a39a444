// Package lint runs the project's static checks as a test, so the one test
// command in the README (and CI) covers them: gofmt, go vet, staticcheck and
// Temporal's workflowcheck over workflows/.
package lint

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// gofmtTool is the gofmt of the go command in use.
func gofmtTool(t *testing.T) string {
	root := strings.TrimSpace(run(t, goTool(), "env", "GOROOT"))
	return filepath.Join(root, "bin", "gofmt")
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s failed: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestGofmt(t *testing.T) {
	out := run(t, gofmtTool(t), "-l", ".")
	if strings.TrimSpace(out) != "" {
		t.Fatalf("gofmt would reformat these files (run gofmt -w):\n%s", out)
	}
}

func TestGoVet(t *testing.T) {
	run(t, goTool(), "vet", "./...")
}

func TestStaticcheck(t *testing.T) {
	run(t, goTool(), "tool", "staticcheck", "./...")
}

func TestWorkflowcheck(t *testing.T) {
	run(t, goTool(), "tool", "workflowcheck", "-config", "workflows/workflowcheck.config.yaml", "./workflows/...")
}
