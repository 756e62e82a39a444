package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestProtectedStateFindsWhatChanged(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{".claude/settings.json", ".git/config", ".git/hooks/pre-commit.sample", "src/main.go"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := w.ProtectedState()
	if got := before.Changed(w.ProtectedState()); len(got) != 0 {
		t.Fatalf("nothing changed, got %q", got)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "src/main.go"), []byte("changed"), 0o644))
	must(os.WriteFile(filepath.Join(dir, ".claude/settings.json"), []byte("y"), 0o644)) // same size
	must(os.Remove(filepath.Join(dir, ".git/hooks/pre-commit.sample")))
	must(os.Symlink("/tmp/elsewhere", filepath.Join(dir, ".mcp.json")))
	got := before.Changed(w.ProtectedState())
	want := []string{".claude/settings.json", ".git/hooks", ".git/hooks/pre-commit.sample", ".mcp.json"}
	if !slices.Equal(got, want) {
		t.Fatalf("changed = %q, want %q", got, want)
	}
}

// The worker's private files inside a workspace (its audit log, which it
// writes on every call) are refused to tools but their changes are the
// worker's own, not reported; a protected file's still are.
func TestPrivateFilesChangesAreNotReported(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	outside := filepath.Join(t.TempDir(), "audit.db-wal")
	for _, p := range []string{filepath.Join(data, "audit.db-wal"), filepath.Join(dir, "policy.json"), outside} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Protect([]string{filepath.Join(dir, "policy.json")}, nil)
	w.Hide([]string{data, outside})
	before := w.ProtectedState()
	for _, p := range []string{filepath.Join(data, "audit.db-wal"), filepath.Join(data, "audit.db-shm"), outside, filepath.Join(dir, "policy.json")} {
		if err := os.WriteFile(p, []byte("written by the worker"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := before.Changed(w.ProtectedState()); !slices.Equal(got, []string{"policy.json"}) {
		t.Fatalf("changed = %q, want only the protected policy.json", got)
	}
	if _, err := w.WriteFile("data/audit.db-wal", []byte("forged"), 1<<20); err == nil {
		t.Fatal("a tool wrote the worker's audit log")
	}
}

// BenchmarkProtectedState is what exec_command adds to every call, twice.
func BenchmarkProtectedState(b *testing.B) {
	dir := b.TempDir()
	for _, f := range []string{".claude/settings.json", ".claude/hooks/guard.sh", ".git/config", ".mcp.json"} {
		p := filepath.Join(dir, f)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		_ = os.WriteFile(p, []byte("x"), 0o644)
	}
	for i := range 13 {
		p := filepath.Join(dir, ".git/hooks", "hook"+string(rune('a'+i))+".sample")
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		_ = os.WriteFile(p, []byte("x"), 0o644)
	}
	w, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for b.Loop() {
		_ = w.ProtectedState()
	}
}
