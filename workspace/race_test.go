package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
)

// A symlink flipping between a plain directory and .claude while writes go
// through it must never land a write in .claude: the check and the open
// are one step.
func TestWriteSymlinkSwapRace(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{".claude", "plain"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	link := filepath.Join(dir, "d")
	if err := os.Symlink("plain", link); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	flipped := make(chan int)
	go func() {
		n := 0
		tmp := filepath.Join(dir, "d.tmp")
		for !stop.Load() {
			target := "plain"
			if n%2 == 0 {
				target = ".claude"
			}
			os.Remove(tmp)
			if os.Symlink(target, tmp) == nil && os.Rename(tmp, link) == nil {
				n++
			}
		}
		flipped <- n
	}()
	var ok, refused int
	for i := 0; i < 3000; i++ {
		_, err := ws.WriteFile("d/settings.local.json", []byte(`{"hooks":{}}`), 0)
		switch {
		case err == nil:
			ok++
		case errors.Is(err, fenixerr.ErrWorkspaceEscape):
			refused++
		default:
			t.Fatalf("write %d: %v", i, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, ".claude/settings.local.json")); err == nil {
			t.Fatalf("write %d landed in .claude/settings.local.json (%d ok, %d refused before it)", i, ok, refused)
		}
	}
	stop.Store(true)
	flips := <-flipped
	t.Logf("%d writes landed in plain/, %d refused, %d flips", ok, refused, flips)
	if ok == 0 || refused == 0 || flips < 100 {
		t.Fatalf("the race did not happen: %d ok, %d refused, %d flips", ok, refused, flips)
	}
}

// A hard link makes a protected file writable under another name: the
// write is refused by the opened file's inode and the file is unchanged.
func TestWriteRefusesHardLinkToProtected(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	files := map[string]string{
		".claude/hooks/guard.sh": "#!/bin/sh\nexit 2\n",
		".claude/settings.json":  `{"hooks":{}}`,
		".git/config":            "[core]\n",
		"plain.txt":              "plain",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outsideScript := filepath.Join(elsewhere, "policy.sh")
	if err := os.WriteFile(outsideScript, []byte("exit 2"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"notes.txt":         ".claude/hooks/guard.sh",
		"sub/settings.copy": ".claude/settings.json",
		"cfg":               ".git/config",
		"plain2.txt":        "plain.txt",
	}
	for link, target := range links {
		p := filepath.Join(dir, link)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Link(filepath.Join(dir, target), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(outsideScript, filepath.Join(dir, "outside-link")); err != nil {
		t.Skipf("temp dirs on different filesystems: %v", err)
	}
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.Protect([]string{outsideScript}, nil)
	for _, p := range []string{"notes.txt", "sub/settings.copy", "cfg", "outside-link"} {
		_, err := ws.WriteFile(p, []byte("exit 0\n"), 0)
		if !errors.Is(err, fenixerr.ErrWorkspaceEscape) || fenixerr.As(err).Code != "protected_path" {
			t.Errorf("WriteFile(%q) = %v, want protected_path", p, err)
		}
	}
	for name, content := range files {
		if name == "plain.txt" {
			continue
		}
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != content {
			t.Errorf("%s changed to %q", name, b)
		}
	}
	if b, _ := os.ReadFile(outsideScript); string(b) != "exit 2" {
		t.Errorf("the outside hook script changed to %q", b)
	}
	// A hard link between two ordinary files is refused too, as a hard
	// link rather than as a protected path.
	if _, err := ws.WriteFile("plain2.txt", []byte("both"), 0); !errors.Is(err, fenixerr.ErrWorkspaceEscape) || fenixerr.As(err).Code != "hard_link" {
		t.Errorf("WriteFile(plain2.txt) = %v, want hard_link", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "plain.txt")); string(b) != "plain" {
		t.Errorf("plain.txt = %q, want it unchanged", b)
	}
}

// ln /outside/file x, by a command or any earlier process, makes x the
// outside file's inode: a write to x is refused, naming the path and the
// link count, and the outside file is unchanged. Once x is a file of its
// own again (replaced by a rename, or the other name gone) it is
// writable, and so is a new file.
func TestWriteRefusesHardLinkedFiles(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	secret := filepath.Join(elsewhere, "secret")
	if err := os.WriteFile(secret, []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(dir, "x")); err != nil {
		t.Skipf("temp dirs on different filesystems: %v", err)
	}
	if err := os.Link(secret, filepath.Join(elsewhere, "secret2")); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_, err = ws.WriteFile("x", []byte("pwned"), 0)
	if !errors.Is(err, fenixerr.ErrWorkspaceEscape) || fenixerr.As(err).Code != "hard_link" {
		t.Fatalf("WriteFile(x) = %v, want hard_link", err)
	}
	for _, want := range []string{`"x"`, "3 links"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "s" {
		t.Fatalf("the outside file changed to %q", b)
	}
	if _, err := ws.WriteFile("new.txt", []byte("n"), 0); err != nil {
		t.Errorf("WriteFile(new.txt) = %v", err)
	}
	if err := os.Rename(filepath.Join(dir, "new.txt"), filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.WriteFile("x", []byte("mine"), 0); err != nil {
		t.Errorf("WriteFile(x) after a rename replaced it = %v", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "s" {
		t.Errorf("the outside file changed to %q", b)
	}
}
