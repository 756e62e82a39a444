package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
)

func TestBasesResolve(t *testing.T) {
	top := t.TempDir()
	base := filepath.Join(top, "base")
	sibling := filepath.Join(top, "base-sibling") // shares base's prefix
	outside := filepath.Join(top, "outside")
	for _, d := range []string{filepath.Join(base, "proj", "sub"), sibling, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(base, "to-proj"):      filepath.Join(base, "proj"),
		filepath.Join(base, "to-outside"):   outside,
		filepath.Join(base, "to-etc"):       "/etc",
		filepath.Join(base, "dangling"):     filepath.Join(outside, "missing"),
		filepath.Join(outside, "into-base"): filepath.Join(base, "proj"),
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	bases, err := NewBases(BasesSetting, base)
	if err != nil {
		t.Fatal(err)
	}
	resolvedBase, _ := filepath.EvalSymlinks(base)

	tests := []struct {
		name     string
		root     string
		want     string // resolved root, when allowed
		wantCode string // error code, when refused
	}{
		{"the base itself", base, resolvedBase, ""},
		{"a directory inside", filepath.Join(base, "proj", "sub"), filepath.Join(resolvedBase, "proj", "sub"), ""},
		{"dot-dot that stays inside", filepath.Join(base, "proj", "..", "proj"), filepath.Join(resolvedBase, "proj"), ""},
		{"symlink inside to inside", filepath.Join(base, "to-proj"), filepath.Join(resolvedBase, "proj"), ""},
		{"symlink outside to inside", filepath.Join(outside, "into-base"), filepath.Join(resolvedBase, "proj"), ""},
		{"filesystem root", "/", "", CodeRootNotAllowed},
		{"etc", "/etc", "", CodeRootNotAllowed},
		{"a sibling sharing the prefix", sibling, "", CodeRootNotAllowed},
		{"dot-dot out of the base", filepath.Join(base, ".."), "", CodeRootNotAllowed},
		{"symlink inside to outside", filepath.Join(base, "to-outside"), "", CodeRootNotAllowed},
		{"symlink inside to /etc", filepath.Join(base, "to-etc"), "", CodeRootNotAllowed},
		{"dangling symlink inside pointing outside", filepath.Join(base, "dangling"), "", "not_found"},
		{"missing directory outside", filepath.Join(outside, "nope"), "", CodeRootNotAllowed},
		{"missing directory inside", filepath.Join(base, "nope"), "", "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := bases.Resolve(tt.root)
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("Resolve(%q): %v", tt.root, err)
				}
				if got != tt.want {
					t.Errorf("Resolve(%q) = %q, want %q", tt.root, got, tt.want)
				}
				ws, err := bases.Open(tt.root)
				if err != nil {
					t.Fatalf("Open(%q): %v", tt.root, err)
				}
				if ws.Dir() != tt.want {
					t.Errorf("Open(%q).Dir() = %q, want %q", tt.root, ws.Dir(), tt.want)
				}
				ws.Close()
				return
			}
			fe := fenixerr.As(err)
			if err == nil || fe.Code != tt.wantCode {
				t.Fatalf("Resolve(%q) = %q, %v; want error code %s", tt.root, got, err, tt.wantCode)
			}
			if _, openErr := bases.Open(tt.root); openErr == nil {
				t.Errorf("Open(%q) succeeded; want it refused", tt.root)
			}
			if tt.wantCode != CodeRootNotAllowed {
				return
			}
			if !errors.Is(err, fenixerr.ErrWorkspaceEscape) || fe.Class != fenixerr.ClassAuthorization {
				t.Errorf("error %v: want a WorkspaceEscapeError of class authorization, got %s/%s", err, fe.Type, fe.Class)
			}
			if !strings.Contains(err.Error(), BasesSetting) || !strings.Contains(err.Error(), tt.root) {
				t.Errorf("error %q should name %s and the root", err, BasesSetting)
			}
		})
	}
}

func TestBasesEmptyAllowsNothing(t *testing.T) {
	bases, err := NewBases(BasesSetting)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = bases.Resolve(t.TempDir())
	if fenixerr.As(err).Code != CodeRootNotAllowed || !strings.Contains(err.Error(), "no workspace base is configured") {
		t.Fatalf("empty bases: %v", err)
	}
}

func TestBasesRootSlashAllowsEverything(t *testing.T) {
	bases, err := NewBases(BasesSetting, "/")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, _, err := bases.Resolve(dir); err != nil {
		t.Fatalf("base / must allow %s: %v", dir, err)
	}
}

func TestNewBasesRejectsMissingAndFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), file} {
		if _, err := NewBases(BasesSetting, dir, bad); err == nil || !strings.Contains(err.Error(), BasesSetting) {
			t.Errorf("NewBases with %q: %v; want an error naming %s", bad, err, BasesSetting)
		}
	}
}

func TestParseList(t *testing.T) {
	got := ParseList(" /srv/a: :/srv/b ::")
	if len(got) != 2 || got[0] != "/srv/a" || got[1] != "/srv/b" {
		t.Fatalf("ParseList = %q", got)
	}
}

// Holds judges a path by where it leads, also one not created yet: a
// settings file reached through a link into a base is in it, one in a
// sibling sharing the base's prefix is not.
func TestBasesHolds(t *testing.T) {
	top := t.TempDir()
	base := filepath.Join(top, "base")
	for _, d := range []string{filepath.Join(base, "proj", ".claude"), filepath.Join(top, "base-sibling"), filepath.Join(top, "outside")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "proj"), filepath.Join(top, "outside", "linked")); err != nil {
		t.Fatal(err)
	}
	b, err := NewBases(BasesSetting, base)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		filepath.Join(base, "proj", ".claude", "settings.json"):           true,
		filepath.Join(base, "proj", ".claude", "new", "settings.json"):    true,
		filepath.Join(top, "outside", "linked", ".claude", "x.json"):      true,
		filepath.Join(top, "outside", "linked", "missing", "a", "b.json"): true,
		filepath.Join(top, "base-sibling", ".mcp.json"):                   false,
		filepath.Join(top, "outside", "hooks.json"):                       false,
		"/etc/fenix/hooks.json":                                           false,
	} {
		if got := b.Holds(path); got != want {
			t.Errorf("Holds(%s) = %v, want %v", path, got, want)
		}
	}
}
