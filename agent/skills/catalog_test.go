package skills

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
)

func testRoots(t *testing.T) Roots {
	base := t.TempDir()
	return Roots{
		System:    filepath.Join(base, "system"),
		Curated:   filepath.Join(base, "curated"),
		Installed: filepath.Join(base, "installed"),
	}
}

func names(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, string(e.Source)+":"+e.Name)
	}
	return out
}

func TestOpenPrecedenceAndProblems(t *testing.T) {
	roots := testRoots(t)
	writeSkill(t, roots.System, "deploy", "deploy", nil)
	writeSkill(t, roots.Curated, "deploy", "deploy", nil)
	writeSkill(t, roots.Curated, "review", "review", nil)
	writeSkill(t, roots.Installed, "Review", "Review", nil)
	writeSkill(t, roots.Installed, "notes", "notes", nil)
	writeSkill(t, roots.Installed, "misnamed", "other", nil)
	if err := os.MkdirAll(filepath.Join(roots.Installed, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, roots.Installed, ".install-123", "staging", nil)
	outside := writeSkill(t, t.TempDir(), "linked", "linked", nil)
	if err := os.Symlink(outside, filepath.Join(roots.Installed, "linked")); err != nil {
		t.Fatal(err)
	}

	c, err := Open(roots)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(c.List()), []string{"system:deploy", "installed:notes", "curated:review"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if got, want := names(c.Shadowed()), []string{"curated:deploy", "installed:Review"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Shadowed = %v, want %v", got, want)
	}
	problems := map[string]string{}
	for _, p := range c.Problems() {
		problems[filepath.Base(p.Dir)] = p.Error
	}
	for dir, want := range map[string]string{
		"misnamed": `directory "misnamed" holds skill "other"`,
		"empty":    `"empty/SKILL.md" does not exist`,
		"linked":   "is a symlink",
	} {
		if !strings.Contains(problems[dir], want) {
			t.Errorf("problem for %s = %q, want it to contain %q", dir, problems[dir], want)
		}
	}
	if len(problems) != 3 {
		t.Errorf("problems = %v, want 3 (dot directories are ignored)", problems)
	}
}

func TestOpenRoots(t *testing.T) {
	base := t.TempDir()
	if _, err := Open(Roots{}); err != nil {
		t.Fatalf("unset roots: %v", err)
	}
	if _, err := Open(Roots{System: filepath.Join(base, "absent")}); err != nil {
		t.Fatalf("absent root: %v", err)
	}
	notDir := filepath.Join(base, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Roots{Curated: notDir}); err == nil || !strings.Contains(err.Error(), "curated skills root") {
		t.Fatalf("root that is a file: err = %v, want an error naming the curated root", err)
	}
}

func TestLoad(t *testing.T) {
	roots := testRoots(t)
	dir := writeSkill(t, roots.System, "deploy", "deploy", map[string]string{"scripts/run.sh": "echo hi\n", "README.md": "x"})
	if err := os.Symlink("README.md", filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	c, err := Open(roots)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := c.Load("deploy")
	if err != nil {
		t.Fatal(err)
	}
	if pkg.SkillMD != manifest("deploy", "Does deploy.") || pkg.Source != KindSystem || pkg.Dir != dir {
		t.Errorf("package = %+v", pkg)
	}
	want := []FileInfo{{"README.md", 1}, {"SKILL.md", int64(len(manifest("deploy", "Does deploy.")))}, {"scripts/run.sh", 8}}
	if !reflect.DeepEqual(pkg.Files, want) {
		t.Errorf("Files = %v, want %v (symlinks not listed)", pkg.Files, want)
	}
	if _, err := c.Load("nope"); err == nil || !strings.Contains(err.Error(), `skill "nope" is not in the catalog`) {
		t.Errorf("Load(nope) err = %v", err)
	}
}

// Load reads at most maxDirEntries entries of one directory, so a skill
// with a huge directory costs no more than one at the limit; the listing
// says it is truncated. A directory at the limit is listed whole, and the
// MaxListedFiles cap still holds across directories.
func TestLoadReadsAHugeDirectoryOnlyUpToTheLimit(t *testing.T) {
	old := maxDirEntries
	maxDirEntries = 10
	t.Cleanup(func() { maxDirEntries = old })
	roots := testRoots(t)
	big := map[string]string{}
	for i := range 40 {
		big[fmt.Sprintf("data/f%02d.txt", i)] = "x"
	}
	writeSkill(t, roots.System, "big", "big", big)
	atLimit := map[string]string{}
	for i := range 9 { // and SKILL.md: ten entries
		atLimit[fmt.Sprintf("f%02d.txt", i)] = "x"
	}
	writeSkill(t, roots.System, "small", "small", atLimit)
	c, err := Open(roots)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := c.Load("big")
	if err != nil {
		t.Fatal(err)
	}
	var data []string
	for _, f := range pkg.Files {
		if strings.HasPrefix(f.Path, "data/") {
			data = append(data, f.Path)
		}
	}
	if len(data) != 10 || !pkg.FilesTruncated || !slices.IsSorted(data) {
		t.Errorf("40 files in data/: listed %d (%q), truncated=%v; want 10 sorted, truncated", len(data), data, pkg.FilesTruncated)
	}
	pkg, err = c.Load("small")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.Files) != 10 || pkg.FilesTruncated || pkg.Files[0].Path != "SKILL.md" {
		t.Errorf("ten entries: %v truncated=%v, want all ten, not truncated", pkg.Files, pkg.FilesTruncated)
	}
}

func TestReadFile(t *testing.T) {
	roots := testRoots(t)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := writeSkill(t, roots.Curated, "deploy", "deploy", map[string]string{"docs/guide.md": "guide", "bin.dat": "\xff\xfe"})
	for link, target := range map[string]string{"escape.txt": secret, "relescape.txt": "../../../" + filepath.Base(filepath.Dir(secret)) + "/secret.txt", "inside.md": "docs/guide.md"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(roots)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		skill, path string
		want        string
		wantBinary  bool
		wantErr     error
		errText     string
	}{
		{"deploy", "docs/guide.md", "guide", false, nil, ""},
		{"deploy", "./docs//guide.md", "guide", false, nil, ""},
		{"deploy", "inside.md", "guide", false, nil, ""},
		{"deploy", "bin.dat", "\ufffd", true, nil, ""},
		{"deploy", "../other/SKILL.md", "", false, fenixerr.ErrWorkspaceEscape, `contains ".."`},
		{"deploy", "docs/../SKILL.md", "", false, fenixerr.ErrWorkspaceEscape, `contains ".."`},
		{"deploy", `docs\..\..\x`, "", false, fenixerr.ErrWorkspaceEscape, `contains ".."`},
		{"deploy", "/etc/passwd", "", false, fenixerr.ErrWorkspaceEscape, "is absolute"},
		{"deploy", "C:/x", "", false, fenixerr.ErrWorkspaceEscape, "is absolute"},
		{"deploy", "escape.txt", "", false, fenixerr.ErrWorkspaceEscape, `skill "deploy" path "escape.txt" resolves outside`},
		{"deploy", "relescape.txt", "", false, fenixerr.ErrWorkspaceEscape, "resolves outside"},
		{"deploy", "pipe", "", false, fenixerr.ErrValidation, "not a regular file"},
		{"deploy", "docs", "", false, fenixerr.ErrValidation, "not a regular file"},
		{"deploy", "missing.md", "", false, fenixerr.ErrValidation, `skill "deploy" path "missing.md" does not exist`},
		{"deploy", "", "", false, fenixerr.ErrValidation, "relative_path is empty"},
		{"deploy", "a\x00b", "", false, fenixerr.ErrValidation, "NUL"},
		{"ghost", "SKILL.md", "", false, fenixerr.ErrValidation, `skill "ghost" is not in the catalog`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := c.ReadFile(tt.skill, tt.path)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want %v containing %q", err, tt.wantErr, tt.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Content != tt.want || got.Binary != tt.wantBinary {
				t.Fatalf("got %+v, want content %q binary %v", got, tt.want, tt.wantBinary)
			}
		})
	}
}

func TestReadFileTruncates(t *testing.T) {
	roots := testRoots(t)
	writeSkill(t, roots.System, "big", "big", map[string]string{"big.txt": strings.Repeat("a", MaxReadFileSize+10)})
	c, err := Open(roots)
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.ReadFile("big", "big.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Truncated || len(f.Content) != MaxReadFileSize || f.Size != MaxReadFileSize+10 {
		t.Fatalf("truncated=%v len=%d size=%d", f.Truncated, len(f.Content), f.Size)
	}
}

func TestReadFileTruncatesOnARuneBoundary(t *testing.T) {
	roots := testRoots(t)
	// "é" is two bytes; an odd prefix puts the cut inside one.
	writeSkill(t, roots.System, "big", "big", map[string]string{"big.txt": "a" + strings.Repeat("é", MaxReadFileSize)})
	c, err := Open(roots)
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.ReadFile("big", "big.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Truncated || f.Binary || len(f.Content) != MaxReadFileSize-1 {
		t.Fatalf("truncated=%v binary=%v len=%d, want a text cut before the split rune", f.Truncated, f.Binary, len(f.Content))
	}
}
