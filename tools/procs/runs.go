package procs

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sort"
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

// runStatus is the final status of a run that ended for reason (empty
// when it exited on its own).
func runStatus(reason string) string {
	switch reason {
	case "":
		return RunExited
	case ReasonTimeout:
		return RunTimedOut
	case ReasonCanceled:
		return RunCanceled
	default:
		return RunKilled
	}
}

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
	// Group recognises the run's process group after a worker crash; set
	// by Begin.
	Group *GroupIdentity `json:"group,omitempty"`
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

// Runs is the host-local command-run registry. Every run is persisted
// under the data directory: as "running", with its process group's
// identity, before the command runs; with its final status and the kept
// output tails once it ends. Running commands' output is read live from
// their process. When a registry opens, runs a dead worker left "running"
// are reaped: what is left of their process group is killed and they are
// closed as killed/worker_lost. Only the newest Keep runs are kept.
type Runs struct {
	store recordStore[CommandRun]
	keep  int
	log   *slog.Logger

	mu       sync.Mutex
	live     map[string]liveRun
	finished int
}

type liveRun struct {
	rec  CommandRun
	proc *Process
}

var resourceIDPattern = regexp.MustCompile(`^[a-z]+_[a-z0-9-]+_[0-9a-f]{16}$`)

// RunsConfig configures OpenRuns.
type RunsConfig struct {
	// Dir holds the run records (created if missing).
	Dir string
	// Keep is how many runs stay readable (default 500).
	Keep int
	// Logger receives what opening the registry reaped from a lost
	// worker (default slog.Default()).
	Logger *slog.Logger
}

// NewRuns opens a registry with the default logger (see OpenRuns).
func NewRuns(dir string, keep int) (*Runs, error) {
	return OpenRuns(RunsConfig{Dir: dir, Keep: keep})
}

// OpenRuns opens (creating) the registry directory, reaps the runs a lost
// worker left running (see Runs) and prunes it.
func OpenRuns(cfg RunsConfig) (*Runs, error) {
	if cfg.Keep <= 0 {
		cfg.Keep = 500
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	store, err := openRecordStore[CommandRun](cfg.Dir, "command run", "command_run_id")
	if err != nil {
		return nil, err
	}
	r := &Runs{store: store, keep: cfg.Keep, log: cfg.Logger, live: map[string]liveRun{}}
	r.store.recover(r.log, r.closeLost)
	r.prune()
	return r, nil
}

func (r CommandRun) recordID() string { return r.ID }

func (r CommandRun) runningGroup() (*GroupIdentity, bool) { return r.Group, r.Status == RunRunning }

// closeLost closes and persists the record of a run whose worker is gone.
func (r *Runs) closeLost(rec CommandRun) (CommandRun, error) {
	rec.Status = RunKilled
	rec.Reason = ReasonWorkerLost
	rec.ExitStatus = nil
	rec.Signal = ""
	now := time.Now().UTC()
	rec.FinishedAt = &now
	// The output lived in the lost worker's memory.
	rec.Stdout, rec.Stderr = StreamCapture{}, StreamCapture{}
	return rec, r.persist(rec)
}

// Begin records a started run whose output is read from proc until
// Finish, and persists it as running together with its process group's
// identity, so that a restarted worker can reap the group if this one
// dies. Call it from Spec.BeforeRun, before the command runs. On error
// the run is not registered.
func (r *Runs) Begin(rec CommandRun, proc *Process) error {
	rec.Status = RunRunning
	ident := proc.Identity()
	rec.Group = &ident
	r.mu.Lock()
	if _, dup := r.live[rec.ID]; dup {
		r.mu.Unlock()
		return fmt.Errorf("command run %s is already running", rec.ID)
	}
	r.live[rec.ID] = liveRun{rec: rec, proc: proc}
	r.mu.Unlock()
	if err := r.store.save(rec); err != nil {
		r.mu.Lock()
		delete(r.live, rec.ID)
		r.mu.Unlock()
		return err
	}
	return nil
}

// Finish completes rec from its ended process, persists it and forgets
// the live process. It returns the final record, also when persisting it
// failed.
func (r *Runs) Finish(rec CommandRun, proc *Process) (CommandRun, error) {
	rec = finalRecord(rec, proc)
	err := r.persist(rec)
	r.mu.Lock()
	delete(r.live, rec.ID)
	r.finished++
	prune := r.finished%50 == 0
	r.mu.Unlock()
	if prune {
		r.prune()
	}
	return rec, err
}

// StopAll stops every running command's process group (worker shutdown).
// Their exec_command calls then finish with the given reason. The final
// records are persisted here too, so a run whose caller does not get to
// Finish before the worker exits is not mistaken for a lost one later.
func (r *Runs) StopAll(reason string, grace time.Duration) {
	r.mu.Lock()
	live := make([]liveRun, 0, len(r.live))
	for _, lr := range r.live {
		live = append(live, lr)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, lr := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lr.proc.Stop(reason, grace)
			r.mu.Lock()
			_, still := r.live[lr.rec.ID]
			r.mu.Unlock()
			if still {
				if err := r.persist(finalRecord(lr.rec, lr.proc)); err != nil {
					r.log.Warn("command run record not persisted at shutdown", "command_run_id", lr.rec.ID, "error", err)
				}
			}
		}()
	}
	wg.Wait()
}

// finalRecord is rec completed from its ended process.
func finalRecord(rec CommandRun, proc *Process) CommandRun {
	exit := proc.Exit()
	rec.Status = runStatus(exit.Reason)
	code := exit.Code
	rec.ExitStatus = &code
	rec.Signal = exit.Signal
	rec.Reason = exit.Reason
	finished := exit.EndedAt.UTC()
	rec.FinishedAt = &finished
	rec.Stdout = captureOf(proc.Stdout())
	rec.Stderr = captureOf(proc.Stderr())
	return rec
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
	live := make(map[string]bool, len(r.live))
	for id, lr := range r.live {
		s := lr.rec.Summary()
		s.StdoutBytes, s.StderrBytes = lr.proc.Stdout().Total(), lr.proc.Stderr().Total()
		out = append(out, s)
		live[id] = true
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	for _, id := range r.store.newest() {
		if limit > 0 && len(out) >= limit {
			break
		}
		if live[id] {
			continue
		}
		if rec, err := r.store.load(id); err == nil {
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

// persist writes output first and the record last, so a finished record
// always has its output next to it. Each file is replaced atomically. A
// stream that kept nothing gets no file (most commands print nothing on
// stderr, many nothing at all): each file is a create and a rename, the
// larger part of a short command's cost.
func (r *Runs) persist(rec CommandRun) error {
	if !resourceIDPattern.MatchString(rec.ID) {
		return fmt.Errorf("command run ID %q is malformed", rec.ID)
	}
	for _, f := range []struct {
		ext  string
		data []byte
	}{{".stdout", rec.Stdout.Data}, {".stderr", rec.Stderr.Data}} {
		if len(f.data) == 0 {
			continue
		}
		if err := r.store.saveFile(rec.ID, f.ext, f.data); err != nil {
			return err
		}
	}
	return r.store.save(rec)
}

func (r *Runs) load(id string) (CommandRun, error) {
	rec, err := r.store.load(id)
	if err != nil {
		return rec, err
	}
	for _, f := range []struct {
		name string
		c    *StreamCapture
	}{{"stdout", &rec.Stdout}, {"stderr", &rec.Stderr}} {
		data, err := os.ReadFile(r.store.path(id, "."+f.name))
		// A running record has no output files (its output is in the
		// memory of the worker running it), nor has a stream that kept
		// nothing.
		kept := f.c.Total - f.c.Start
		if err != nil && !(errors.Is(err, os.ErrNotExist) && (rec.Status == RunRunning || kept == 0)) {
			return rec, fmt.Errorf("command run %s %s is missing: %w", id, f.name, err)
		}
		f.c.Data = data
	}
	return rec, nil
}

// prune deletes the oldest runs beyond keep. Running runs are neither
// counted nor deleted: their records are what a restarted worker needs.
func (r *Runs) prune() {
	r.mu.Lock()
	live := make(map[string]bool, len(r.live))
	for id := range r.live {
		live[id] = true
	}
	r.mu.Unlock()
	var ids []string
	for _, id := range r.store.newest() {
		if !live[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) <= r.keep {
		return
	}
	for _, id := range ids[r.keep:] {
		r.store.remove(id, ".stdout", ".stderr")
	}
}
