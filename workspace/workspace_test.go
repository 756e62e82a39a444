package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fenixrt/fenix/fenixerr"
)

func setup(t *testing.T) (*Workspace, string, string) {
	t.Helper()
	dir, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, ".git/hooks"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "src/a.txt"), []byte("a"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	for link, target := range map[string]string{
		"srclink":   "src",
		"hooks":     ".git/hooks",
		"hookfile":  ".git/hooks/post-checkout",
		"gitconfig": "src/../.git/config",
		"chain1":    "chain2",
		"chain2":    "hooks/pre-push",
		"loop":      "loop",
		"absolute":  outside,
		"up":        "../x",
		"vendorgit": "vendor/lib/.GIT",
		"nestedcfg": "sub/.git/config",
	} {
		must(os.Symlink(target, filepath.Join(dir, link)))
	}
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	ws, err := Open(dir)
	must(err)
	t.Cleanup(func() { ws.Close() })
	return ws, dir, outside
}

func TestResolveLinks(t *testing.T) {
	ws, _, _ := setup(t)
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"src/a.txt", "src/a.txt", false},
		{"srclink/a.txt", "src/a.txt", false},
		{"srclink/new/deep.txt", "src/new/deep.txt", false},
		{"hooks/pre-commit", ".git/hooks/pre-commit", false},
		{"hookfile", ".git/hooks/post-checkout", false},
		{"gitconfig", ".git/config", false},
		{"chain1", ".git/hooks/pre-push", false},
		{"loop", "", true},
		{"absolute/secret", "", true},
		{"up", "", true},
	}
	for _, tt := range tests {
		got, err := ws.resolveLinks(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("resolveLinks(%q) = %q, %v; want %q (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// ResolveLinks cleans the path first: one that names no place inside the
// root is an error, as every other access would make it.
func TestResolveLinksCleans(t *testing.T) {
	ws, _, _ := setup(t)
	for in, want := range map[string]string{"./srclink//a.txt": "src/a.txt", "src/../srclink": "src", "": "."} {
		if got, err := ws.ResolveLinks(in); err != nil || got != want {
			t.Errorf("ResolveLinks(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"/etc/passwd", "../x", "up/y", "absolute/secret", "loop"} {
		if got, err := ws.ResolveLinks(in); !errors.Is(err, fenixerr.ErrWorkspaceEscape) {
			t.Errorf("ResolveLinks(%q) = %q, %v; want a WorkspaceEscapeError", in, got, err)
		}
	}
}

func TestWriteFileRefusals(t *testing.T) {
	ws, dir, outside := setup(t)
	tests := []struct {
		path string
		want *fenixerr.Error
		code string
	}{
		{".git/hooks/pre-commit", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".git/config", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".fenix/hooks.json", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".claude/settings.json", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".claude/hooks/guard.py", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".claude/agents/new.md", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".claude", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"./.claude/../.claude/x", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"hooks/pre-commit", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"hookfile", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"chain1", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"gitconfig", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"absolute/secret", fenixerr.ErrWorkspaceEscape, ""},
		{"../escape", fenixerr.ErrWorkspaceEscape, ""},
		{"/etc/passwd", fenixerr.ErrWorkspaceEscape, ""},
		{"loop", fenixerr.ErrWorkspaceEscape, ""},
		// A nested repository's hooks and config run programs as much as
		// the top-level ones, and a case-insensitive mount makes .GIT the
		// same directory as .git.
		{"sub/.git/hooks/pre-commit", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"vendor/x/.git/config", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".GIT/hooks/pre-commit", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"sub/.Git/config", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".git/info/attributes", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".git/modules/lib/config", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"lib/.git", fenixerr.ErrWorkspaceEscape, "protected_path"}, // a submodule's gitfile
		{"vendorgit/hooks/post-merge", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"nestedcfg", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".CLAUDE/settings.json", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".fenix/HOOKS.json", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".mcp.json", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".MCP.json", fenixerr.ErrWorkspaceEscape, "protected_path"},
		// The global git configuration of the commands, whose HOME the
		// workspace is: a core.fsmonitor there runs in an allowed git status.
		{".gitconfig", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"src/../.gitconfig", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{".config/git/config", fenixerr.ErrWorkspaceEscape, "protected_path"},
		{"fifo", fenixerr.ErrValidation, "not_regular_file"},
		{"src", fenixerr.ErrValidation, "is_directory"},
		{".", fenixerr.ErrValidation, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ws.WriteFile(tt.path, []byte("x"), 0); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, tt.want) || (tt.code != "" && fenixerr.As(err).Code != tt.code) {
					t.Fatalf("WriteFile(%q) = %v, want %s %s", tt.path, err, tt.want.Type, tt.code)
				}
			case <-time.After(3 * time.Second):
				t.Fatalf("WriteFile(%q) hung", tt.path)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, ".git/hooks/pre-commit")); !os.IsNotExist(err) {
		t.Error("a hook was written")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "s" {
		t.Error("the outside file changed")
	}
	if _, err := ws.WriteFile("srclink/ok.txt", []byte("fine"), 0); err != nil {
		t.Errorf("an in-root symlinked write failed: %v", err)
	}
	// Names that only start like a protected one stay writable.
	for _, p := range []string{".gitignore", "sub/.github/workflows/ci.yml", "src/.git-blame-ignore-revs", ".claude-notes.md", "docs/.mcp.json",
		"docs/.gitconfig", ".config/app.toml"} {
		if _, err := ws.WriteFile(p, []byte("x"), 0); err != nil {
			t.Errorf("WriteFile(%q) = %v, want it allowed", p, err)
		}
	}
	// Protected is about writing: the git config stays readable.
	if err := os.WriteFile(filepath.Join(dir, ".git/config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := ws.ReadFile(".git/config", 0); err != nil || string(r.Content) != "[core]\n" {
		t.Errorf("ReadFile(.git/config) = %q, %v", r.Content, err)
	}
	if _, err := ws.WriteFile("big", make([]byte, 11), 10); !errors.Is(err, fenixerr.ErrPayloadTooLarge) {
		t.Errorf("oversize write = %v", err)
	}
}

func TestReadFileRefusesNonRegularWithoutBlocking(t *testing.T) {
	ws, _, _ := setup(t)
	for _, p := range []string{"fifo", "src", "absolute/secret", "loop"} {
		done := make(chan error, 1)
		go func() { _, err := ws.ReadFile(p, 0); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("ReadFile(%q) succeeded", p)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("ReadFile(%q) hung", p)
		}
	}
}

// Protect adds the scripts loaded hooks run: by absolute path inside the
// workspace, through a symlink, or relative to every workspace.
func TestProtectedHookScripts(t *testing.T) {
	dir := t.TempDir()
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := os.MkdirAll(filepath.Join(dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("tools", filepath.Join(dir, "t")); err != nil {
		t.Fatal(err)
	}
	ws.Protect([]string{filepath.Join(dir, "tools", "guard.sh"), "/etc/fenix/guard.sh", dir}, []string{"scripts/check.py", "../outside"})
	for _, p := range []string{"tools/guard.sh", "t/guard.sh", "scripts/check.py", "Scripts/CHECK.py"} {
		if _, err := ws.WriteFile(p, []byte("exit 0"), 0); !errors.Is(err, fenixerr.ErrWorkspaceEscape) || fenixerr.As(err).Code != "protected_path" {
			t.Errorf("WriteFile(%q) = %v, want protected_path", p, err)
		}
	}
	for _, p := range []string{"tools/other.sh", "scripts/check.py.bak", "src/main.go"} {
		if _, err := ws.WriteFile(p, []byte("x"), 0); err != nil {
			t.Errorf("WriteFile(%q) = %v, want it allowed", p, err)
		}
	}
}

// An absolute protected path is judged where its symlinks lead: a
// directory linked into the workspace, and a dangling link whose target
// the worker would read once something creates it.
func TestProtectFollowsSymlinksOfAbsolutePaths(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := os.Mkdir(filepath.Join(dir, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"etc":          filepath.Join(dir, "conf"),
		"servers.json": filepath.Join(dir, "later.json"),
	} {
		if err := os.Symlink(target, filepath.Join(elsewhere, link)); err != nil {
			t.Fatal(err)
		}
	}
	ws.Protect([]string{filepath.Join(elsewhere, "etc", "mcp.json"), filepath.Join(elsewhere, "servers.json")}, nil)
	for _, p := range []string{"conf/mcp.json", "later.json"} {
		if _, err := ws.WriteFile(p, []byte(`{"mcpServers":{}}`), 0); !errors.Is(err, fenixerr.ErrWorkspaceEscape) || fenixerr.As(err).Code != "protected_path" {
			t.Errorf("WriteFile(%q) = %v, want protected_path", p, err)
		}
	}
	if _, err := ws.WriteFile("conf/other.json", []byte("{}"), 0); err != nil {
		t.Errorf("WriteFile(conf/other.json) = %v, want it allowed", err)
	}
}

func TestReadDirLimit(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"c", "a", "e", "b", "d"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	names := func(n int) ([]string, bool) {
		t.Helper()
		entries, more, _, err := ws.ReadDirLimit(".", n)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out, more
	}
	if got, more := names(6); more || len(got) != 6 || got[0] != "a" || got[5] != "out" {
		t.Errorf("limit 6 of 6: %q more=%v, want all, sorted, more=false", got, more)
	}
	if got, more := names(3); !more || len(got) != 3 || !sortedStrings(got) {
		t.Errorf("limit 3 of 6: %q more=%v, want 3 sorted, more=true", got, more)
	}
	if _, _, _, err := ws.ReadDirLimit("out", 10); err == nil {
		t.Error("listing a symlink out of the workspace succeeded")
	}
	if _, _, _, err := ws.ReadDirLimit("../", 10); err == nil {
		t.Error("listing .. succeeded")
	}
}

func sortedStrings(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] > s[i] {
			return false
		}
	}
	return true
}

// A FIFO where a directory is expected (made by the agent, or swapped in
// for a directory between a parent's listing and the child's open) is
// refused at once: opening a FIFO for reading blocks until a writer
// comes, which the agent may never send, and the listing (the operator
// snapshot of every round, workspace_list) would hang with it.
func TestReadDirRefusesNonDirectoriesWithoutBlocking(t *testing.T) {
	ws, _, _ := setup(t)
	listings := map[string]func() error{
		"ReadDir":      func() error { _, _, err := ws.ReadDir("fifo"); return err },
		"ReadDirLimit": func() error { _, _, _, err := ws.ReadDirLimit("fifo", 10); return err },
		"ReadDir file": func() error { _, _, err := ws.ReadDir("src/a.txt"); return err },
	}
	for name, list := range listings {
		done := make(chan error, 1)
		go func() { done <- list() }()
		select {
		case err := <-done:
			if err == nil || fenixerr.As(err).Code != "not_directory" {
				t.Errorf("%s of a non-directory = %v, want a not_directory error", name, err)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("%s of a FIFO hung", name)
		}
	}
}

// FS's listings go through the same open: fs.WalkDir of a tree whose
// subdirectory is a FIFO by the time it is entered reports it and goes on.
func TestFSReadDirRefusesFIFOWithoutBlocking(t *testing.T) {
	ws, _, _ := setup(t)
	done := make(chan error, 1)
	go func() { _, err := fs.ReadDir(ws.FS(), "fifo"); done <- err }()
	select {
	case err := <-done:
		if err == nil || fenixerr.As(err).Code != "not_directory" {
			t.Errorf("fs.ReadDir(FS, fifo) = %v, want a not_directory error", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("fs.ReadDir(FS, fifo) hung")
	}
	if entries, err := fs.ReadDir(ws.FS(), "src"); err != nil || len(entries) != 1 || entries[0].Name() != "a.txt" {
		t.Errorf("fs.ReadDir(FS, src) = %v, %v; want [a.txt]", entries, err)
	}
}
