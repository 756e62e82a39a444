package procs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Command-run statuses.
const (
	RunRunning  = "running"
	RunExited   = "exited"
	RunTimedOut = "timed_out"
	RunCanceled = "canceled"
	RunKilled   = "killed"
)

// StreamCapture is the kept tail of one output stream.
type StreamCapture struct {
	// Data is the kept tail; Start is the stream offset of its first byte.
	Data  []byte `json:"-"`
	Start int64  `json:"start"`
	Total int64  `json:"total"`
}

// CommandRun is the registry record of one exec_command run.
type CommandRun struct {
	ID             string        `json:"command_run_id"`
	CommandLine    string        `json:"command_line"`
	Cwd            string        `json:"cwd"`
	CallID         string        `json:"call_id,omitempty"`
	ConversationID string        `json:"conversation_id,omitempty"`
	TurnID         string        `json:"turn_id,omitempty"`
	TimeoutSeconds int           `json:"timeout_seconds"`
	PID            int           `json:"pid"`
	Status         string        `json:"status"`
	ExitStatus     *int          `json:"exit_status,omitempty"`
	Signal         string        `json:"signal,omitempty"`
	Reason         string        `json:"reason,omitempty"`
	StartedAt      time.Time     `json:"started_at"`
	FinishedAt     *time.Time    `json:"finished_at,omitempty"`
	Stdout         StreamCapture `json:"stdout"`
	Stderr         StreamCapture `json:"stderr"`
}

// RunSummary is a command run without its output.
type RunSummary struct {
	ID             string     `json:"command_run_id"`
	CommandLine    string     `json:"command_line"`
	Status         string     `json:"status"`
	ExitStatus     *int       `json:"exit_status,omitempty"`
	StartedAt      time.Time  `json:"started_at"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
	StdoutBytes    int64      `json:"stdout_bytes"`
	StderrBytes    int64      `json:"stderr_bytes"`
	ConversationID string     `json:"conversation_id,omitempty"`
}

// Summary drops the output.
func (r CommandRun) Summary() RunSummary {
	return RunSummary{
		ID: r.ID, CommandLine: r.CommandLine, Status: r.Status, ExitStatus: r.ExitStatus,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		StdoutBytes: r.Stdout.Total, StderrBytes: r.Stderr.Total, ConversationID: r.ConversationID,
	}
}

// Runs is the host-local command-run registry. Running commands are read
// live from their process; finished ones are persisted under the data
// directory (metadata plus the kept output tails) so they stay readable
// after the worker restarts. Only the newest Keep finished runs are kept.
type Runs struct {
	dir  string
	keep int

	mu       sync.Mutex
	live     map[string]liveRun
	finished int
}

type liveRun struct {
	rec  CommandRun
	proc *Process
}

var resourceIDPattern = regexp.MustCompile(`^[a-z]+_[a-z0-9-]+_[0-9a-f]{16}$`)

// NewRuns opens (creating) the registry directory and prunes it.
func NewRuns(dir string, keep int) (*Runs, error) {
	if keep <= 0 {
		keep = 500
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating command-run directory %s: %w", dir, err)
	}
	r := &Runs{dir: dir, keep: keep, live: map[string]liveRun{}}
	r.prune()
	return r, nil
}

// Begin records a started run whose output is read from proc until Finish.
func (r *Runs) Begin(rec CommandRun, proc *Process) {
	rec.Status = RunRunning
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live[rec.ID] = liveRun{rec: rec, proc: proc}
}

// Finish persists the final record and forgets the live process.
func (r *Runs) Finish(rec CommandRun) error {
	err := r.persist(rec)
	r.mu.Lock()
	delete(r.live, rec.ID)
	r.finished++
	prune := r.finished%50 == 0
	r.mu.Unlock()
	if prune {
		r.prune()
	}
	return err
}

// StopAll stops every running command's process group (worker shutdown).
// Their exec_command calls then finish with the given reason.
func (r *Runs) StopAll(reason string, grace time.Duration) {
	r.mu.Lock()
	live := make([]*Process, 0, len(r.live))
	for _, lr := range r.live {
		live = append(live, lr.proc)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Stop(reason, grace)
		}()
	}
	wg.Wait()
}

// Get returns a run with its kept output.
func (r *Runs) Get(id string) (CommandRun, error) {
	if !resourceIDPattern.MatchString(id) {
		return CommandRun{}, fmt.Errorf("%w: %q is not a command run ID", ErrNotFound, id)
	}
	r.mu.Lock()
	lr, ok := r.live[id]
	r.mu.Unlock()
	if ok {
		rec := lr.rec
		rec.Stdout = captureOf(lr.proc.Stdout())
		rec.Stderr = captureOf(lr.proc.Stderr())
		return rec, nil
	}
	return r.load(id)
}

// List summarizes the newest runs (running ones first), at most limit.
func (r *Runs) List(limit int) []RunSummary {
	r.mu.Lock()
	var out []RunSummary
	for _, lr := range r.live {
		s := lr.rec.Summary()
		s.StdoutBytes, s.StderrBytes = lr.proc.Stdout().Total(), lr.proc.Stderr().Total()
		out = append(out, s)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	for _, id := range r.newestFiles() {
		if limit > 0 && len(out) >= limit {
			break
		}
		if rec, err := r.loadMeta(id); err == nil {
			out = append(out, rec.Summary())
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func captureOf(t *Tail) StreamCapture {
	data, start := t.Last(0)
	return StreamCapture{Data: data, Start: start, Total: start + int64(len(data))}
}

// CaptureOf snapshots a tail.
func CaptureOf(t *Tail) StreamCapture { return captureOf(t) }

func (r *Runs) path(id, ext string) string { return filepath.Join(r.dir, id+ext) }

// persist writes output first and metadata last, so a metadata file always
// has its output next to it.
func (r *Runs) persist(rec CommandRun) error {
	if !resourceIDPattern.MatchString(rec.ID) {
		return fmt.Errorf("command run ID %q is malformed", rec.ID)
	}
	meta, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		ext  string
		data []byte
	}{{".stdout", rec.Stdout.Data}, {".stderr", rec.Stderr.Data}, {".json", meta}} {
		tmp := r.path(rec.ID, f.ext+".tmp")
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			return fmt.Errorf("persisting command run %s: %w", rec.ID, err)
		}
		if err := os.Rename(tmp, r.path(rec.ID, f.ext)); err != nil {
			return fmt.Errorf("persisting command run %s: %w", rec.ID, err)
		}
	}
	return nil
}

func (r *Runs) loadMeta(id string) (CommandRun, error) {
	raw, err := os.ReadFile(r.path(id, ".json"))
	if errors.Is(err, os.ErrNotExist) {
		return CommandRun{}, fmt.Errorf("%w: command run %q is not known on this host (it may have been pruned)", ErrNotFound, id)
	}
	if err != nil {
		return CommandRun{}, err
	}
	var rec CommandRun
	if err := json.Unmarshal(raw, &rec); err != nil {
		return CommandRun{}, fmt.Errorf("command run %s record is corrupt: %w", id, err)
	}
	return rec, nil
}

func (r *Runs) load(id string) (CommandRun, error) {
	rec, err := r.loadMeta(id)
	if err != nil {
		return rec, err
	}
	if rec.Stdout.Data, err = os.ReadFile(r.path(id, ".stdout")); err != nil {
		return rec, fmt.Errorf("command run %s stdout is missing: %w", id, err)
	}
	if rec.Stderr.Data, err = os.ReadFile(r.path(id, ".stderr")); err != nil {
		return rec, fmt.Errorf("command run %s stderr is missing: %w", id, err)
	}
	return rec, nil
}

// newestFiles lists persisted run IDs, newest first.
func (r *Runs) newestFiles() []string {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return nil
	}
	type item struct {
		id  string
		mod time.Time
	}
	var items []item
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !resourceIDPattern.MatchString(id) {
			continue
		}
		if info, err := e.Info(); err == nil {
			items = append(items, item{id, info.ModTime()})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].mod.After(items[j].mod) })
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.id
	}
	return ids
}

func (r *Runs) prune() {
	ids := r.newestFiles()
	if len(ids) <= r.keep {
		return
	}
	for _, id := range ids[r.keep:] {
		for _, ext := range []string{".json", ".stdout", ".stderr"} {
			os.Remove(r.path(id, ext))
		}
	}
}
