// Package operator snapshots the state of a workspace for the main agent's
// Operator State prompt section (the seed's Operator::Snapshot): a bounded
// list of workspace files, the agent's memory entries, command runs,
// process runs and browser sessions.
//
// The snapshot is written to the session's operator_state.json,
//
//	<workspace>/.fenix/sessions/<conversation_id>/operator_state.json
//
// atomically (temporary file, then rename), and returned as a JSON object
// for the prompt. Its indented JSON is bounded by Limits.MaxBytes: when it
// would be larger, the largest lists are halved until it fits, and the
// output says so in "truncated" and "omitted".
//
// Memory entries and runs belong to the tools that create them; this
// package reads them through the small Lister interfaces below, each of
// which may be nil (the section is then left out).
package operator

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/workspace"
)

// Scope identifies whose state is snapshotted.
type Scope struct {
	WorkspaceRoot  string `json:"workspace_root"`
	ConversationID string `json:"conversation_id"`
	Profile        string `json:"profile"`
	// ReadDenied, when set, is the permission rules' verdict on reading a
	// workspace path (hooks.PathFilter.ReadDenied): a path it denies is
	// left out of the listing, as workspace_list leaves it out, and
	// counted in State.FilesHidden.
	ReadDenied func(root, rel string, resolve func(rel string) (string, error)) bool `json:"-"`
}

// MemoryEntry summarizes one stored memory.
type MemoryEntry struct {
	Key       string    `json:"key"`
	Title     string    `json:"title,omitempty"`
	Bytes     int       `json:"bytes,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// RunSummary summarizes a command run or a process run.
type RunSummary struct {
	ID         string    `json:"id"`
	Command    string    `json:"command,omitempty"`
	Status     string    `json:"status"`
	ExitStatus *int      `json:"exit_status,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	// ProxyPath is where a background service is reachable, if anywhere.
	ProxyPath string `json:"proxy_path,omitempty"`
}

// BrowserSession summarizes an open browser session.
type BrowserSession struct {
	ID     string `json:"id"`
	URL    string `json:"url,omitempty"`
	Title  string `json:"title,omitempty"`
	Status string `json:"status,omitempty"`
	// StartedAt gives the session's age.
	StartedAt time.Time `json:"started_at,omitzero"`
}

// MemoryLister lists the memory entries of scope.Profile in
// scope.WorkspaceRoot.
type MemoryLister interface {
	ListMemory(ctx context.Context, scope Scope) ([]MemoryEntry, error)
}

// RunLister lists command or process runs, newest first.
type RunLister interface {
	ListRuns(ctx context.Context, scope Scope) ([]RunSummary, error)
}

// BrowserSessionLister lists browser sessions, newest first.
type BrowserSessionLister interface {
	ListBrowserSessions(ctx context.Context, scope Scope) ([]BrowserSession, error)
}

// MemoryListerFunc, RunListerFunc and BrowserSessionListerFunc adapt
// plain functions, so wiring a tool's store is a closure.
type (
	MemoryListerFunc         func(ctx context.Context, scope Scope) ([]MemoryEntry, error)
	RunListerFunc            func(ctx context.Context, scope Scope) ([]RunSummary, error)
	BrowserSessionListerFunc func(ctx context.Context, scope Scope) ([]BrowserSession, error)
)

func (f MemoryListerFunc) ListMemory(ctx context.Context, s Scope) ([]MemoryEntry, error) {
	return f(ctx, s)
}

func (f RunListerFunc) ListRuns(ctx context.Context, s Scope) ([]RunSummary, error) {
	return f(ctx, s)
}

func (f BrowserSessionListerFunc) ListBrowserSessions(ctx context.Context, s Scope) ([]BrowserSession, error) {
	return f(ctx, s)
}

// Limits bound a snapshot.
type Limits struct {
	// MaxFiles caps the workspace listing.
	MaxFiles int `json:"max_files"`
	// MaxDepth is how many directory levels are listed (1 = top level).
	MaxDepth int `json:"max_depth"`
	// MaxEntriesPerSource caps memory entries, command runs, process runs
	// and browser sessions, each.
	MaxEntriesPerSource int `json:"max_entries_per_source"`
	// MaxBytes caps the indented JSON of the whole state.
	MaxBytes int `json:"max_bytes"`
	// SkipDirs are directory names that are listed but never expanded.
	SkipDirs []string `json:"skip_dirs"`
}

// DefaultLimits keep the Operator State section small enough to send on
// every round.
var DefaultLimits = Limits{
	MaxFiles:            200,
	MaxDepth:            4,
	MaxEntriesPerSource: 50,
	MaxBytes:            32 << 10,
	SkipDirs:            []string{".git", ".fenix", "node_modules"},
}

// State is the snapshot content. Directories in Files end with "/".
type State struct {
	WorkspaceRoot     string   `json:"workspace_root"`
	Files             []string `json:"files"`
	FilesTruncated    bool     `json:"files_truncated,omitempty"`
	FilesDepthLimited bool     `json:"files_depth_limited,omitempty"`
	// FilesHidden counts the paths left out because a Read deny rule
	// covers them (a hidden directory counts once, its contents not).
	FilesHidden     int               `json:"files_hidden,omitempty"`
	MemoryEntries   []MemoryEntry     `json:"memory_entries,omitempty"`
	CommandRuns     []RunSummary      `json:"command_runs,omitempty"`
	ProcessRuns     []RunSummary      `json:"process_runs,omitempty"`
	BrowserSessions []BrowserSession  `json:"browser_sessions,omitempty"`
	Unavailable     map[string]string `json:"unavailable,omitempty"`
	// Truncated is set when lists were shortened to fit MaxBytes; Omitted
	// says how many entries each list lost.
	Truncated bool           `json:"truncated,omitempty"`
	Omitted   map[string]int `json:"omitted,omitempty"`
}

// Snapshot is the result of Snapshotter.Snapshot.
type Snapshot struct {
	State State `json:"state"`
	// Object is State as a JSON object, for contract.PromptSections.
	Object map[string]any `json:"-"`
	// Path is the workspace-relative path of operator_state.json.
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

// Snapshotter takes snapshots. The zero value lists files only, with
// DefaultLimits.
type Snapshotter struct {
	Memory          MemoryLister
	CommandRuns     RunLister
	ProcessRuns     RunLister
	BrowserSessions BrowserSessionLister
	// Limits are DefaultLimits when zero.
	Limits Limits
}

// StateFile is the snapshot's file name in the session directory.
const StateFile = "operator_state.json"

var conversationIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// StatePath returns the workspace-relative path of a conversation's
// operator_state.json. The conversation ID names a directory, so it must
// be a plain name.
func StatePath(conversationID string) (string, error) {
	if !conversationIDPattern.MatchString(conversationID) {
		return "", fenixerr.Validation("conversation_id %q cannot name a session directory: use 1-128 letters, digits, '.', '-' or '_', starting with a letter or digit", conversationID)
	}
	return path.Join(".fenix", "sessions", conversationID, StateFile), nil
}

// Snapshot lists the workspace and the sources, bounds the result and
// writes it to the session's operator_state.json. A failing source is
// reported in State.Unavailable, not returned: the prompt can go without
// it. Errors are returned for an unusable workspace or conversation ID and
// for a failed write.
func (s *Snapshotter) Snapshot(ctx context.Context, scope Scope) (Snapshot, error) {
	limits := s.limits()
	rel, err := StatePath(scope.ConversationID)
	if err != nil {
		return Snapshot{}, err
	}
	ws, err := workspace.Open(scope.WorkspaceRoot)
	if err != nil {
		return Snapshot{}, err
	}
	defer ws.Close()

	st := State{WorkspaceRoot: ws.Dir()}
	hidden := func(string) bool { return false }
	if scope.ReadDenied != nil {
		hidden = func(rel string) bool { return scope.ReadDenied(ws.Dir(), rel, ws.ResolveLinks) }
	}
	st.Files, st.FilesHidden, st.FilesTruncated, st.FilesDepthLimited = listFiles(ws, limits, hidden)
	scope.WorkspaceRoot = ws.Dir()
	unavailable := func(source string, err error) {
		if st.Unavailable == nil {
			st.Unavailable = map[string]string{}
		}
		st.Unavailable[source] = clip(err.Error(), 200)
	}
	if s.Memory != nil {
		entries, err := s.Memory.ListMemory(ctx, scope)
		if err != nil {
			unavailable("memory_entries", err)
		}
		st.MemoryEntries = boundMemory(entries, limits.MaxEntriesPerSource)
	}
	if s.CommandRuns != nil {
		runs, err := s.CommandRuns.ListRuns(ctx, scope)
		if err != nil {
			unavailable("command_runs", err)
		}
		st.CommandRuns = boundRuns(runs, limits.MaxEntriesPerSource)
	}
	if s.ProcessRuns != nil {
		runs, err := s.ProcessRuns.ListRuns(ctx, scope)
		if err != nil {
			unavailable("process_runs", err)
		}
		st.ProcessRuns = boundRuns(runs, limits.MaxEntriesPerSource)
	}
	if s.BrowserSessions != nil {
		sessions, err := s.BrowserSessions.ListBrowserSessions(ctx, scope)
		if err != nil {
			unavailable("browser_sessions", err)
		}
		st.BrowserSessions = boundBrowser(sessions, limits.MaxEntriesPerSource)
	}
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}

	data, err := fit(&st, limits.MaxBytes)
	if err != nil {
		return Snapshot{}, err
	}
	if err := writeAtomic(ws.Dir(), rel, append(data, '\n')); err != nil {
		return Snapshot{}, err
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return Snapshot{}, fenixerr.Runtime("operator state does not decode as an object: %v", err)
	}
	return Snapshot{State: st, Object: obj, Path: rel, Bytes: len(data)}, nil
}

func (s *Snapshotter) limits() Limits {
	l := s.Limits
	d := DefaultLimits
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxEntriesPerSource <= 0 {
		l.MaxEntriesPerSource = d.MaxEntriesPerSource
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.SkipDirs == nil {
		l.SkipDirs = d.SkipDirs
	}
	return l
}

func boundMemory(in []MemoryEntry, n int) []MemoryEntry {
	out := slices.Clone(in[:min(len(in), n)])
	for i := range out {
		out[i].Key = clip(out[i].Key, 128)
		out[i].Title = clip(out[i].Title, 200)
	}
	return out
}

func boundRuns(in []RunSummary, n int) []RunSummary {
	out := slices.Clone(in[:min(len(in), n)])
	for i := range out {
		out[i].ID = clip(out[i].ID, 128)
		out[i].Command = clip(out[i].Command, 200)
		out[i].Status = clip(out[i].Status, 64)
		out[i].ProxyPath = clip(out[i].ProxyPath, 200)
	}
	return out
}

func boundBrowser(in []BrowserSession, n int) []BrowserSession {
	out := slices.Clone(in[:min(len(in), n)])
	for i := range out {
		out[i].ID = clip(out[i].ID, 128)
		out[i].URL = clip(out[i].URL, 200)
		out[i].Title = clip(out[i].Title, 120)
		out[i].Status = clip(out[i].Status, 64)
	}
	return out
}

// fit encodes st, halving its largest list until the indented JSON is at
// most maxBytes. It records what it dropped in st.
func fit(st *State, maxBytes int) ([]byte, error) {
	for {
		data, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return nil, fenixerr.Runtime("encoding operator state: %v", err)
		}
		if len(data) <= maxBytes {
			return data, nil
		}
		if !halveLargest(st) {
			if st.Unavailable != nil {
				st.Unavailable = nil
				st.Truncated = true
				continue
			}
			// Only scalars are left; nothing more can go.
			return data, nil
		}
	}
}

// halveLargest drops the second half of the list with the largest
// encoding. Listers return newest first, so the newest entries stay.
func halveLargest(st *State) bool {
	type list struct {
		name   string
		size   int
		n      int
		shrink func(keep int)
	}
	size := func(v any) int { b, _ := json.Marshal(v); return len(b) }
	lists := []list{
		{"files", size(st.Files), len(st.Files), func(k int) { st.Files = st.Files[:k]; st.FilesTruncated = true }},
		{"memory_entries", size(st.MemoryEntries), len(st.MemoryEntries), func(k int) { st.MemoryEntries = st.MemoryEntries[:k] }},
		{"command_runs", size(st.CommandRuns), len(st.CommandRuns), func(k int) { st.CommandRuns = st.CommandRuns[:k] }},
		{"process_runs", size(st.ProcessRuns), len(st.ProcessRuns), func(k int) { st.ProcessRuns = st.ProcessRuns[:k] }},
		{"browser_sessions", size(st.BrowserSessions), len(st.BrowserSessions), func(k int) { st.BrowserSessions = st.BrowserSessions[:k] }},
	}
	lists = slices.DeleteFunc(lists, func(l list) bool { return l.n == 0 })
	if len(lists) == 0 {
		return false
	}
	largest := slices.MaxFunc(lists, func(a, b list) int { return cmp.Compare(a.size, b.size) })
	keep := largest.n / 2
	largest.shrink(keep)
	if st.Omitted == nil {
		st.Omitted = map[string]int{}
	}
	st.Omitted[largest.name] += largest.n - keep
	st.Truncated = true
	return true
}

// writeAtomic writes data to rel under dir through os.Root: a temporary
// file in the same directory, then a rename, so readers never see a
// partial snapshot.
func writeAtomic(dir, rel string, data []byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return writeError(dir, rel, err)
	}
	defer root.Close()
	if err := root.MkdirAll(path.Dir(rel), 0o755); err != nil {
		return writeError(dir, rel, err)
	}
	tmp := rel + ".tmp-" + rand.Text()
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return writeError(dir, rel, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		root.Remove(tmp)
		return writeError(dir, rel, err)
	}
	return nil
}

func writeError(dir, rel string, err error) error {
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fenixerr.WorkspaceEscape("cannot write %s: it resolves outside workspace %q (is .fenix a symlink?)", rel, dir).WithCause(err)
	}
	return fenixerr.Runtime("cannot write %s in workspace %q: %v", rel, dir, err).WithCause(err)
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
