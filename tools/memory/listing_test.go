package memory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
)

// A listing reads an entry's head: a large entry is summarized from the
// fields before its content, even when what follows is damaged.
func TestListReadsTheHeadOfLargeEntries(t *testing.T) {
	s, dir := newStore(t)
	content := strings.Repeat("y", 40<<10)
	if _, _, err := s.Write("main", Entry{Key: "big", Title: "Large notes", Content: content}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, ProfileDir("main"), "big.json")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the file inside its content: the head still tells the summary.
	if err := os.WriteFile(file, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := s.List("main")
	if err != nil || len(list.Entries) != 1 {
		t.Fatalf("List = %+v, %v; want the entry summarized from its head", list, err)
	}
	if got := list.Entries[0]; got.Title != "Large notes" || got.Bytes != len(content) || got.UpdatedAt.IsZero() {
		t.Errorf("summary = %+v, want title, %d bytes and the update time", got, len(content))
	}
}

// An entry file written before entries led with their head (content
// before updated_at, no content_bytes) is read whole and listed as before.
func TestListReadsOlderEntriesWhole(t *testing.T) {
	s, dir := newStore(t)
	content := strings.Repeat("z", 20<<10)
	older := fmt.Sprintf("{\n  \"key\": \"old\",\n  \"title\": \"Old notes\",\n  \"content\": %q,\n  \"updated_at\": \"2025-05-06T07:08:09Z\"\n}", content)
	mustWriteFile(t, filepath.Join(dir, ProfileDir("main"), "old.json"), older)
	list, err := s.List("main")
	if err != nil || len(list.Entries) != 1 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if got := list.Entries[0]; got.Title != "Old notes" || got.Bytes != len(content) || got.UpdatedAt.Year() != 2025 {
		t.Errorf("summary = %+v", got)
	}
	if _, ok, whole := s.summarize("main", "old", maxFileBytes-1); ok || whole != -1 {
		t.Errorf("summarize over budget = ok %v, whole %d; want refused (-1)", ok, whole)
	}
}

// A profile directory filled with files that are not entries costs a
// bounded listing, which says it is incomplete, and a new entry is
// refused with what to do, while existing entries can still be updated.
func TestAFloodedProfileDirectoryStaysBounded(t *testing.T) {
	s, dir := newStore(t)
	if _, _, err := s.Write("main", Entry{Key: "kept", Content: "v1"}); err != nil {
		t.Fatal(err)
	}
	profileDir := filepath.Join(dir, ProfileDir("main"))
	for i := range maxScannedNames + 10 {
		mustWriteFile(t, filepath.Join(profileDir, fmt.Sprintf("junk-%05d.txt", i)), "x")
	}
	list, err := s.List("main")
	if err != nil || !list.Incomplete {
		t.Fatalf("List = %d entries, incomplete %v, %v; want it marked incomplete", len(list.Entries), list.Incomplete, err)
	}
	_, _, err = s.Write("main", Entry{Key: "new", Content: "x"})
	if !errors.Is(err, fenixerr.ErrValidation) || fenixerr.As(err).Code != "memory_full" || !strings.Contains(err.Error(), "remove the files in .fenix/memory/main") {
		t.Errorf("Write(new) = %v, want memory_full naming the directory to clean", err)
	}
	if _, created, err := s.Write("main", Entry{Key: "kept", Content: "v2"}); err != nil || created {
		t.Errorf("Write(kept) = created %v, %v; want an update", created, err)
	}
}

// The limit counts entry files by name, without reading them, and only
// files named like entries.
func TestTheEntryLimitCountsEntryNames(t *testing.T) {
	s, dir := newStore(t)
	profileDir := filepath.Join(dir, ProfileDir("main"))
	for i := range MaxEntries - 1 {
		mustWriteFile(t, filepath.Join(profileDir, fmt.Sprintf("k%04d.json", i)), "{}")
	}
	mustWriteFile(t, filepath.Join(profileDir, "README.txt"), "not an entry")
	if _, _, err := s.Write("main", Entry{Key: "last", Content: "x"}); err != nil {
		t.Fatalf("Write(last) = %v, want the %dth entry saved", err, MaxEntries)
	}
	_, _, err := s.Write("main", Entry{Key: "one-more", Content: "x"})
	if fenixerr.As(err).Code != "memory_full" {
		t.Errorf("Write(one-more) = %v, want memory_full", err)
	}
}

func mustWriteFile(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
