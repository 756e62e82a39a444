package skills

import (
	"archive/tar"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
)

func TestInstallSources(t *testing.T) {
	tests := []struct {
		name      string
		source    func(t *testing.T) string
		wantName  string
		wantFiles []FileInfo
	}{
		{"directory", func(t *testing.T) string {
			dir := writeSkill(t, t.TempDir(), "src", "notes", map[string]string{"ref/a.md": "aaa", ".git/config": "x"})
			return dir
		}, "notes", []FileInfo{{"SKILL.md", int64(len(manifest("notes", "Does notes.")))}, {"ref/a.md", 3}}},
		{"tar.gz with a top-level directory", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{
				{tar.Header{Name: "deploy/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
				file("deploy/SKILL.md", manifest("deploy", "Ships.")),
				{tar.Header{Name: "deploy/run.sh", Typeflag: tar.TypeReg, Mode: 0o4755, Size: 3}, "ls\n"},
				{tar.Header{Name: "pax_global_header", Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "x"}}, ""},
			})
		}, "deploy", []FileInfo{{"SKILL.md", int64(len(manifest("deploy", "Ships.")))}, {"run.sh", 3}}},
		{"flat tgz with ./ prefixes", func(t *testing.T) string {
			p := writeTarGz(t, []tarEntry{
				{tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
				file("./SKILL.md", manifest("flat", "Flat.")),
			})
			tgz := strings.TrimSuffix(p, ".tar.gz") + ".tgz"
			if err := os.Rename(p, tgz); err != nil {
				t.Fatal(err)
			}
			return tgz
		}, "flat", []FileInfo{{"SKILL.md", int64(len(manifest("flat", "Flat.")))}}},
		{"zip", func(t *testing.T) string {
			return writeZip(t, []zipEntry{
				{name: "lint/", mode: fs.ModeDir | 0o755},
				{name: "lint/SKILL.md", body: manifest("lint", "Lints.")},
				{name: "lint/rules/x.yaml", body: "r: 1"},
			})
		}, "lint", []FileInfo{{"SKILL.md", int64(len(manifest("lint", "Lints.")))}, {"rules/x.yaml", 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			roots := testRoots(t)
			c, err := Open(roots)
			if err != nil {
				t.Fatal(err)
			}
			e, err := c.Install(tt.source(t))
			if err != nil {
				t.Fatal(err)
			}
			if e.Name != tt.wantName || e.Source != KindInstalled || e.Dir != filepath.Join(roots.Installed, tt.wantName) {
				t.Fatalf("entry = %+v", e)
			}
			pkg, err := c.Load(tt.wantName)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pkg.Files, tt.wantFiles) {
				t.Fatalf("files = %v, want %v", pkg.Files, tt.wantFiles)
			}
			if got := dirNames(t, roots.Installed); !reflect.DeepEqual(got, []string{tt.wantName}) {
				t.Fatalf("installed root holds %v, want only %s (no staging leftovers)", got, tt.wantName)
			}
			// A fresh scan finds it too.
			reopened, err := Open(roots)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := reopened.Lookup(tt.wantName); !ok {
				t.Fatal("installed skill not found after reopening the catalog")
			}
		})
	}
}

func TestInstallKeepsOnlyTheExecutableBit(t *testing.T) {
	roots := testRoots(t)
	c, _ := Open(roots)
	src := writeTarGz(t, []tarEntry{
		file("SKILL.md", manifest("perm", "P.")),
		{tar.Header{Name: "run.sh", Typeflag: tar.TypeReg, Mode: 0o6777, Size: 2}, "ls"},
	})
	if _, err := c.Install(src); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(roots.Installed, "perm", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid); got&^0o022 != 0o755&^0o022 || got&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		t.Fatalf("mode = %v, want 0755 without setuid/setgid", info.Mode())
	}
}

func TestInstallRejects(t *testing.T) {
	ok := file("SKILL.md", manifest("bad", "Bad."))
	tests := []struct {
		name    string
		source  func(t *testing.T) string
		limits  InstallLimits
		wantErr error
		errText string
	}{
		{"tar traversal", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, file("../evil.txt", "x")})
		}, InstallLimits{}, fenixerr.ErrWorkspaceEscape, `entry "../evil.txt" contains ".."`},
		{"tar nested traversal", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, file("a/../../evil.txt", "x")})
		}, InstallLimits{}, fenixerr.ErrWorkspaceEscape, `contains ".."`},
		{"tar absolute", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, file("/tmp/evil.txt", "x")})
		}, InstallLimits{}, fenixerr.ErrWorkspaceEscape, `entry "/tmp/evil.txt" is an absolute path`},
		{"tar backslash", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, file(`..\evil.txt`, "x")})
		}, InstallLimits{}, fenixerr.ErrValidation, "backslash"},
		{"tar symlink", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, {tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, ""}})
		}, InstallLimits{}, fenixerr.ErrValidation, `entry "link" is a symlink to "/etc/passwd"`},
		{"tar symlink then write through it", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{{tar.Header{Name: "d", Typeflag: tar.TypeSymlink, Linkname: "/tmp"}, ""}, file("d/evil.txt", "x"), ok})
		}, InstallLimits{}, fenixerr.ErrValidation, "is a symlink"},
		{"tar hard link", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, {tar.Header{Name: "hard", Typeflag: tar.TypeLink, Linkname: "SKILL.md"}, ""}})
		}, InstallLimits{}, fenixerr.ErrValidation, "is a hard link"},
		{"tar char device", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, {tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}, ""}})
		}, InstallLimits{}, fenixerr.ErrValidation, "is a device"},
		{"tar block device", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, {tar.Header{Name: "sda", Typeflag: tar.TypeBlock}, ""}})
		}, InstallLimits{}, fenixerr.ErrValidation, "is a device"},
		{"tar fifo", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, {tar.Header{Name: "pipe", Typeflag: tar.TypeFifo}, ""}})
		}, InstallLimits{}, fenixerr.ErrValidation, "is a FIFO"},
		{"tar duplicate file", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, ok})
		}, InstallLimits{}, fenixerr.ErrValidation, `contains "SKILL.md" more than once`},
		{"tar too many entries", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, file("a", "1"), file("b", "2"), file("c", "3")})
		}, InstallLimits{MaxEntries: 3}, fenixerr.ErrPayloadTooLarge, "more than 3 files and directories"},
		{"tar too many bytes", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{ok, file("big", strings.Repeat("z", 5000))})
		}, InstallLimits{MaxBytes: 4096}, fenixerr.ErrPayloadTooLarge, "more than 4096 bytes"},
		{"not gzip", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "x.tar.gz")
			os.WriteFile(p, []byte("plain"), 0o644)
			return p
		}, InstallLimits{}, fenixerr.ErrValidation, "not gzip-compressed"},
		{"zip traversal", func(t *testing.T) string {
			return writeZip(t, []zipEntry{{name: "SKILL.md", body: manifest("bad", "Bad.")}, {name: "../../evil.txt", body: "x"}})
		}, InstallLimits{}, fenixerr.ErrWorkspaceEscape, `entry "../../evil.txt" contains ".."`},
		{"zip absolute", func(t *testing.T) string {
			return writeZip(t, []zipEntry{{name: "/abs/evil.txt", body: "x"}})
		}, InstallLimits{}, fenixerr.ErrWorkspaceEscape, "absolute path"},
		{"zip symlink", func(t *testing.T) string {
			return writeZip(t, []zipEntry{{name: "SKILL.md", body: manifest("bad", "Bad.")}, {name: "link", mode: fs.ModeSymlink | 0o777, body: "/etc/passwd"}})
		}, InstallLimits{}, fenixerr.ErrValidation, `entry "link" is a symlink`},
		{"zip device", func(t *testing.T) string {
			return writeZip(t, []zipEntry{{name: "SKILL.md", body: manifest("bad", "Bad.")}, {name: "dev", mode: fs.ModeDevice | fs.ModeCharDevice | 0o600}})
		}, InstallLimits{}, fenixerr.ErrValidation, "special file"},
		{"zip too many entries", func(t *testing.T) string {
			return writeZip(t, []zipEntry{{name: "SKILL.md", body: "x"}, {name: "a"}, {name: "b"}})
		}, InstallLimits{MaxEntries: 2}, fenixerr.ErrPayloadTooLarge, "has 3 entries"},
		{"zip bomb is cut off by written bytes", func(t *testing.T) string {
			return writeZip(t, []zipEntry{{name: "SKILL.md", body: manifest("bad", "Bad.")}, {name: "bomb", body: strings.Repeat("0", 1<<20)}})
		}, InstallLimits{MaxBytes: 64 << 10}, fenixerr.ErrPayloadTooLarge, `more than 65536 bytes (at "bomb")`},
		{"directory with a symlink", func(t *testing.T) string {
			dir := writeSkill(t, t.TempDir(), "src", "bad", nil)
			os.Symlink("/etc/passwd", filepath.Join(dir, "passwd"))
			return dir
		}, InstallLimits{}, fenixerr.ErrValidation, `entry "passwd" is a symlink`},
		{"no SKILL.md", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{file("README.md", "x")})
		}, InstallLimits{}, fenixerr.ErrValidation, "has no SKILL.md at its top level or in a single top-level directory"},
		{"two top-level directories", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{file("a/SKILL.md", manifest("a", "A.")), file("b/SKILL.md", manifest("b", "B."))})
		}, InstallLimits{}, fenixerr.ErrValidation, "has no SKILL.md"},
		{"bad front matter", func(t *testing.T) string {
			return writeTarGz(t, []tarEntry{file("SKILL.md", "---\nname: bad\n---\n")})
		}, InstallLimits{}, fenixerr.ErrValidation, `skill "bad" needs a non-empty string "description"`},
		{"unsupported source", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "skill.rar")
			os.WriteFile(p, nil, 0o644)
			return p
		}, InstallLimits{}, fenixerr.ErrValidation, "neither a directory nor a .tar.gz, .tgz or .zip archive"},
		{"missing source", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), "nope.zip")
		}, InstallLimits{}, fenixerr.ErrValidation, "cannot be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			roots := Roots{Installed: filepath.Join(base, "installed")}
			c, err := Open(roots, WithInstallLimits(tt.limits))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Install(tt.source(t))
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errText) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.wantErr, tt.errText)
			}
			if got := dirNames(t, roots.Installed); len(got) != 0 {
				t.Fatalf("installed root holds %v after a failed install, want nothing", got)
			}
			if got := dirNames(t, base); !reflect.DeepEqual(got, []string{"installed"}) && got != nil {
				t.Fatalf("something was written next to the installed root: %v", got)
			}
			if len(c.List()) != 0 {
				t.Fatalf("catalog gained %v", c.List())
			}
		})
	}
}

func TestInstallCollisions(t *testing.T) {
	roots := testRoots(t)
	writeSkill(t, roots.System, "deploy", "deploy", nil)
	writeSkill(t, roots.Curated, "review", "review", nil)
	c, err := Open(roots)
	if err != nil {
		t.Fatal(err)
	}
	src := func(name string) string { return writeSkill(t, t.TempDir(), name, name, nil) }

	if _, err := c.Install(src("notes")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		errText string
	}{
		{"deploy", `skill "deploy" is already installed from the system root`},
		{"review", `skill "review" is already installed from the curated root`},
		{"Deploy", `skill "Deploy" collides with skill "deploy" from the system root`},
		{"notes", `skill "notes" is already installed from the installed root`},
	}
	for _, tt := range tests {
		_, err := c.Install(src(tt.name))
		if !errors.Is(err, fenixerr.ErrValidation) || !strings.Contains(err.Error(), tt.errText) {
			t.Errorf("install %s: err = %v, want %q", tt.name, err, tt.errText)
		}
		if fe := fenixerr.As(err); fe.Code != "skill_exists" {
			t.Errorf("install %s: code = %q, want skill_exists", tt.name, fe.Code)
		}
	}
	if e, _ := c.Lookup("deploy"); e.Source != KindSystem {
		t.Fatalf("deploy now comes from %s, want system", e.Source)
	}
	if got := dirNames(t, roots.Installed); !reflect.DeepEqual(got, []string{"notes"}) {
		t.Fatalf("installed root = %v, want [notes]", got)
	}
}

func TestInstallWithoutInstalledRoot(t *testing.T) {
	c, _ := Open(Roots{})
	_, err := c.Install(t.TempDir())
	if !errors.Is(err, fenixerr.ErrValidation) || !strings.Contains(err.Error(), "no installed skills root") {
		t.Fatalf("err = %v", err)
	}
}

func TestInstalledDirectoryMode(t *testing.T) {
	roots := testRoots(t)
	c, _ := Open(roots)
	if _, err := c.Install(writeTarGz(t, []tarEntry{file("SKILL.md", manifest("flat", "F."))})); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(roots.Installed, "flat"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o055 == 0 {
		t.Fatalf("skill directory mode = %v, want it readable by group and others like other directories", info.Mode())
	}
}
