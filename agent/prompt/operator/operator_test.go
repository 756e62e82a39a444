package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/fenixerr"
)

func touch(t *testing.T, root string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if strings.HasSuffix(rel, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStatePath(t *testing.T) {
	tests := []struct {
		id      string
		want    string
		wantErr bool
	}{
		{"conv-1", ".fenix/sessions/conv-1/operator_state.json", false},
		{"0b7c.2_x", ".fenix/sessions/0b7c.2_x/operator_state.json", false},
		{"", "", true},
		{".", "", true},
		{"..", "", true},
		{"../escape", "", true},
		{"a/b", "", true},
		{".hidden", "", true},
		{strings.Repeat("a", 129), "", true},
	}
	for _, tt := range tests {
		got, err := StatePath(tt.id)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("StatePath(%q) = %q, %v; want %q, error %v", tt.id, got, err, tt.want, tt.wantErr)
		}
		if err != nil && (!errors.Is(err, fenixerr.ErrValidation) || !strings.Contains(err.Error(), "conversation_id")) {
			t.Errorf("StatePath(%q) error %v should be a ValidationError naming conversation_id", tt.id, err)
		}
	}
}

func TestSnapshotFiles(t *testing.T) {
	tests := []struct {
		name         string
		tree         []string
		limits       Limits
		want         []string
		truncated    bool
		depthLimited bool
	}{
		{"breadth first, dirs marked, skip dirs listed but not expanded",
			[]string{"b.txt", "a/x.go", "a/y/z.go", ".git/HEAD", "node_modules/pkg/index.js", ".fenix/memory/main/k.json"},
			Limits{},
			[]string{".fenix/", ".git/", "a/", "b.txt", "node_modules/", "a/x.go", "a/y/", "a/y/z.go"}, false, false},
		{"depth limit",
			[]string{"a/b/c/d.txt", "top.txt"},
			Limits{MaxDepth: 2},
			[]string{"a/", "top.txt", "a/b/"}, false, true},
		{"count limit",
			[]string{"1", "2", "3", "d/4"},
			Limits{MaxFiles: 3},
			[]string{"1", "2", "3"}, true, false},
		{"exactly at the count limit is not truncated",
			[]string{"1", "2", "3"},
			Limits{MaxFiles: 3},
			[]string{"1", "2", "3"}, false, false},
		{"custom skip list",
			[]string{"vendor/x/y.go", "main.go"},
			Limits{SkipDirs: []string{"vendor"}},
			[]string{"main.go", "vendor/"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			touch(t, ws, tt.tree...)
			s := Snapshotter{Limits: tt.limits}
			snap, err := s.Snapshot(context.Background(), Scope{WorkspaceRoot: ws, ConversationID: "c1", Profile: "main"})
			if err != nil {
				t.Fatal(err)
			}
			// The snapshot's own file is written after listing.
			got := snap.State.Files
			if !reflect.DeepEqual(got, tt.want) || snap.State.FilesTruncated != tt.truncated || snap.State.FilesDepthLimited != tt.depthLimited {
				t.Fatalf("files = %q truncated=%v depthLimited=%v\nwant %q truncated=%v depthLimited=%v",
					got, snap.State.FilesTruncated, snap.State.FilesDepthLimited, tt.want, tt.truncated, tt.depthLimited)
			}
		})
	}
}

type fakeSources struct {
	memory   []MemoryEntry
	runs     []RunSummary
	browsers []BrowserSession
	err      error
	scopes   []Scope
}

func (f *fakeSources) ListMemory(_ context.Context, s Scope) ([]MemoryEntry, error) {
	f.scopes = append(f.scopes, s)
	return f.memory, f.err
}

func (f *fakeSources) ListRuns(_ context.Context, s Scope) ([]RunSummary, error) {
	return f.runs, f.err
}

func (f *fakeSources) ListBrowserSessions(_ context.Context, s Scope) ([]BrowserSession, error) {
	return f.browsers, f.err
}

func TestSnapshotSourcesAndFile(t *testing.T) {
	ws := t.TempDir()
	touch(t, ws, "README.md")
	exit0 := 0
	at := time.Date(2026, 3, 25, 12, 0, 0, 0, time.UTC)
	src := &fakeSources{
		memory:   []MemoryEntry{{Key: "project-notes", Title: "Notes", Bytes: 120, UpdatedAt: at}},
		runs:     []RunSummary{{ID: "cr-1", Command: "go test ./...", Status: "succeeded", ExitStatus: &exit0, StartedAt: at}},
		browsers: []BrowserSession{{ID: "bs-1", URL: "https://example.test", Title: "Example"}},
	}
	failing := RunListerFunc(func(context.Context, Scope) ([]RunSummary, error) {
		return nil, errors.New("process registry is on another host")
	})
	s := Snapshotter{Memory: src, CommandRuns: src, ProcessRuns: failing, BrowserSessions: src}
	snap, err := s.Snapshot(context.Background(), Scope{WorkspaceRoot: ws, ConversationID: "conv-9", Profile: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if len(src.scopes) != 1 || src.scopes[0].Profile != "main" || src.scopes[0].ConversationID != "conv-9" {
		t.Errorf("memory lister got scopes %+v", src.scopes)
	}
	want := State{
		WorkspaceRoot:   ws,
		Files:           []string{"README.md"},
		MemoryEntries:   src.memory,
		CommandRuns:     src.runs,
		BrowserSessions: src.browsers,
		Unavailable:     map[string]string{"process_runs": "process registry is on another host"},
	}
	if !reflect.DeepEqual(snap.State, want) {
		t.Errorf("state =\n%+v\nwant\n%+v", snap.State, want)
	}
	if snap.Path != ".fenix/sessions/conv-9/operator_state.json" {
		t.Errorf("path = %q", snap.Path)
	}
	data, err := os.ReadFile(filepath.Join(ws, snap.Path))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk map[string]any
	if err := json.Unmarshal(data, &onDisk); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(onDisk, snap.Object) {
		t.Errorf("file content %v differs from the returned object %v", onDisk, snap.Object)
	}
	if snap.Object["command_runs"].([]any)[0].(map[string]any)["exit_status"] != 0.0 {
		t.Errorf("object = %v", snap.Object)
	}
	if _, ok := snap.Object["process_runs"]; ok {
		t.Errorf("a failed source should be absent from the lists, present in unavailable: %v", snap.Object)
	}

	// A second snapshot replaces the file and leaves no temporary files.
	touch(t, ws, "NEW.md")
	if _, err := s.Snapshot(context.Background(), Scope{WorkspaceRoot: ws, ConversationID: "conv-9", Profile: "main"}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(ws, ".fenix/sessions/conv-9"))
	if len(entries) != 1 || entries[0].Name() != StateFile {
		t.Errorf("session directory holds %v, want only %s", entries, StateFile)
	}
	data, _ = os.ReadFile(filepath.Join(ws, snap.Path))
	if !strings.Contains(string(data), "NEW.md") {
		t.Errorf("second snapshot did not replace the file:\n%s", data)
	}
}

func TestSnapshotNilSourcesAreLeftOut(t *testing.T) {
	snap, err := (&Snapshotter{}).Snapshot(context.Background(), Scope{WorkspaceRoot: t.TempDir(), ConversationID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range snap.Object {
		keys = append(keys, k)
	}
	if len(keys) != 2 || snap.Object["files"] == nil || snap.Object["workspace_root"] == nil {
		t.Fatalf("object keys = %v, want only files and workspace_root", keys)
	}
}

func TestSnapshotBounds(t *testing.T) {
	ws := t.TempDir()
	var tree []string
	for i := range 150 {
		tree = append(tree, fmt.Sprintf("dir-%03d/file-with-a-long-descriptive-name-%03d.txt", i%10, i))
	}
	touch(t, ws, tree...)
	src := &fakeSources{}
	for i := range 80 {
		src.memory = append(src.memory, MemoryEntry{Key: fmt.Sprintf("key-%02d", i), Title: strings.Repeat("t", 500)})
		src.runs = append(src.runs, RunSummary{ID: fmt.Sprintf("cr-%02d", i), Command: strings.Repeat("c", 500), Status: "running"})
	}

	tests := []struct {
		name     string
		limits   Limits
		maxBytes int
	}{
		{"default 32 KiB", Limits{}, DefaultLimits.MaxBytes},
		{"tight 4 KiB", Limits{MaxBytes: 4096}, 4096},
		{"tiny 600 bytes", Limits{MaxBytes: 600}, 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Snapshotter{Memory: src, CommandRuns: src, Limits: tt.limits}
			snap, err := s.Snapshot(context.Background(), Scope{WorkspaceRoot: ws, ConversationID: "c", Profile: "main"})
			if err != nil {
				t.Fatal(err)
			}
			indented, _ := json.MarshalIndent(snap.Object, "", "  ")
			if snap.Bytes > tt.maxBytes || len(indented) > tt.maxBytes {
				t.Fatalf("snapshot is %d bytes (%d as rendered), limit %d", snap.Bytes, len(indented), tt.maxBytes)
			}
			st := snap.State
			if !st.Truncated || snap.Object["truncated"] != true {
				t.Fatal("truncation not reported")
			}
			if len(st.MemoryEntries) > DefaultLimits.MaxEntriesPerSource || len(st.CommandRuns) > DefaultLimits.MaxEntriesPerSource {
				t.Fatalf("per-source cap not applied: %d memory, %d runs", len(st.MemoryEntries), len(st.CommandRuns))
			}
			for _, m := range st.MemoryEntries {
				if len(m.Title) > 200 {
					t.Fatalf("memory title of %d bytes was not clipped", len(m.Title))
				}
			}
			// Omitted counts add up to what was dropped after the caps.
			if got := st.Omitted["memory_entries"] + len(st.MemoryEntries); st.Omitted["memory_entries"] > 0 && got != DefaultLimits.MaxEntriesPerSource {
				t.Fatalf("memory: kept %d + omitted %d != %d", len(st.MemoryEntries), st.Omitted["memory_entries"], DefaultLimits.MaxEntriesPerSource)
			}
			if st.Omitted["files"] > 0 && !st.FilesTruncated {
				t.Fatal("files were dropped but files_truncated is not set")
			}
		})
	}
}

func TestSnapshotErrors(t *testing.T) {
	outside := t.TempDir()
	linked := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(linked, ".fenix")); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name    string
		ctx     context.Context
		scope   Scope
		wantErr string
	}{
		{"no workspace", context.Background(), Scope{ConversationID: "c"}, "workspace root is not set"},
		{"missing workspace", context.Background(), Scope{WorkspaceRoot: filepath.Join(outside, "nope"), ConversationID: "c"}, "cannot be opened"},
		{"bad conversation id", context.Background(), Scope{WorkspaceRoot: outside, ConversationID: "../x"}, `conversation_id "../x"`},
		{".fenix symlinked out of the workspace", context.Background(), Scope{WorkspaceRoot: linked, ConversationID: "c"}, "operator_state.json: it resolves outside workspace"},
		{"canceled", canceled, Scope{WorkspaceRoot: outside, ConversationID: "c"}, "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&Snapshotter{}).Snapshot(tt.ctx, tt.scope)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("snapshot wrote outside the workspace: %v", entries)
	}
}

// A directory larger than maxDirEntries is read only that far: the
// snapshot costs the same for 100,000 files in one directory as for a few
// thousand, and says the listing is truncated. One at the limit is listed
// whole.
func TestSnapshotReadsAHugeDirectoryOnlyUpToTheLimit(t *testing.T) {
	old := maxDirEntries
	maxDirEntries = 10
	t.Cleanup(func() { maxDirEntries = old })
	for _, tt := range []struct {
		files, want int
		truncated   bool
	}{{50, 10, true}, {10, 10, false}} {
		ws := t.TempDir()
		for i := range tt.files {
			touch(t, ws, fmt.Sprintf("f%02d.txt", i))
		}
		var s Snapshotter
		snap, err := s.Snapshot(context.Background(), Scope{WorkspaceRoot: ws, ConversationID: "c1", Profile: "main"})
		if err != nil {
			t.Fatal(err)
		}
		got := snap.State.Files
		if len(got) != tt.want || snap.State.FilesTruncated != tt.truncated || !slices.IsSorted(got) {
			t.Errorf("%d files in one directory: listed %d (%q), truncated=%v; want %d sorted, truncated=%v",
				tt.files, len(got), got, snap.State.FilesTruncated, tt.want, tt.truncated)
		}
	}
}
