package memory

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/workspace"
)

func newStore(t testing.TB) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	s := NewStore(ws)
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.now = func() time.Time { clock = clock.Add(time.Minute); return clock }
	return s, dir
}

func TestWriteReadList(t *testing.T) {
	s, dir := newStore(t)
	e, created, err := s.Write("main", Entry{Key: "project-notes", Title: "Notes", Content: "use Temporal"})
	if err != nil || !created {
		t.Fatalf("Write = %v, created %v", err, created)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ".fenix/memory/main/project-notes.json"))
	if err != nil || !strings.Contains(string(raw), `"updated_at": "2026-01-02T03:05:05Z"`) {
		t.Fatalf("file = %s (%v)", raw, err)
	}
	if _, created, _ := s.Write("main", Entry{Key: "project-notes", Content: "v2"}); created {
		t.Error("overwrite reported created")
	}
	s.Write("main", Entry{Key: "b", Content: "bee"})
	s.Write("researcher", Entry{Key: "other", Content: "separate"})

	got, err := s.Read("main", "project-notes")
	if err != nil || got.Content != "v2" || !got.UpdatedAt.After(e.UpdatedAt) {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	list, err := s.List("main")
	if err != nil || len(list.Entries) != 2 || list.Entries[0].Key != "b" || list.Entries[1].Key != "project-notes" || list.Incomplete {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if at, err := ListAt(dir, "main"); err != nil || len(at.Entries) != 2 {
		t.Fatalf("ListAt = %+v, %v", at, err)
	}
	empty, err := s.List("nobody")
	if err != nil || len(empty.Entries) != 0 {
		t.Fatalf("List(nobody) = %+v, %v", empty, err)
	}
}

func TestValidation(t *testing.T) {
	s, _ := newStore(t)
	tests := []struct {
		name    string
		profile string
		entry   Entry
		want    *fenixerr.Error
	}{
		{"traversal key", "main", Entry{Key: "../x"}, fenixerr.ErrValidation},
		{"slash key", "main", Entry{Key: "a/b"}, fenixerr.ErrValidation},
		{"uppercase key", "main", Entry{Key: "Notes"}, fenixerr.ErrValidation},
		{"dot key", "main", Entry{Key: ".hidden"}, fenixerr.ErrValidation},
		{"long key", "main", Entry{Key: strings.Repeat("a", 65)}, fenixerr.ErrValidation},
		{"traversal profile", "../etc", Entry{Key: "a"}, fenixerr.ErrValidation},
		{"multi-line title", "main", Entry{Key: "a", Title: "x\ny"}, fenixerr.ErrValidation},
		{"content too large", "main", Entry{Key: "a", Content: strings.Repeat("x", MaxContentBytes+1)}, fenixerr.ErrPayloadTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := s.Write(tt.profile, tt.entry)
			if !errors.Is(err, tt.want) {
				t.Errorf("Write err = %v, want %s", err, tt.want.Type)
			}
		})
	}
	if _, err := s.Read("main", "absent"); fenixerr.As(err).Code != "not_found" {
		t.Errorf("Read(absent) = %v, want not_found", err)
	}
}
