package policydiff

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fenixrt/fenix/history/runhistory"
)

// RunRef names a recorded run.
type RunRef struct {
	WorkflowID string
	RunID      string
}

// Fetch reads one run's history.
type Fetch func(ctx context.Context, ref RunRef) (*runhistory.Run, error)

// Result is one replayed call.
type Result struct {
	Call
	Candidate Verdict `json:"candidate"`
	Change    Change  `json:"change"`
	// SkipReason says why a skipped call could not be re-decided.
	SkipReason string `json:"skip_reason,omitempty"`
}

// Summary counts the replay. Replayed = NewlyBlocked + NewlyAllowed +
// InputChanged + Unchanged; skipped calls could not be re-decided
// faithfully (Skips counts them by reason).
type Summary struct {
	Runs         int `json:"runs"`
	Replayed     int `json:"replayed"`
	NewlyBlocked int `json:"newly_blocked"`
	NewlyAllowed int `json:"newly_allowed"`
	InputChanged int `json:"input_changed"`
	Unchanged    int `json:"unchanged"`
	Skipped      int `json:"skipped"`
	// Skips counts the skipped calls by reason.
	Skips map[string]int `json:"skips,omitempty"`
	// RecordedPolicies counts the replayed calls by the fingerprint of the
	// policy that decided them ("" for verdicts recorded without one).
	RecordedPolicies map[string]int `json:"recorded_policies"`
}

// Changed reports whether any call would be decided differently.
func (s Summary) Changed() bool { return s.NewlyBlocked+s.NewlyAllowed+s.InputChanged > 0 }

// Report is a replay's outcome: every call, in run order.
type Report struct {
	Results []Result
	Summary Summary
}

// Changes lists the calls whose verdict changes.
func (r Report) Changes() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Change != ChangeUnchanged && res.Change != ChangeSkipped {
			out = append(out, res)
		}
	}
	return out
}

// Options tune Replay.
type Options struct {
	// Concurrency bounds the runs fetched and replayed at once (default 8).
	Concurrency int
	// Progress, when set, receives a progress line at most twice a second.
	Progress io.Writer
}

// Replay fetches every run (with bounded concurrency), extracts its
// reviewed calls and re-evaluates each under p. A run that cannot be read
// fails the replay, naming the run: a policy gate must not pass because
// some history was skipped.
func Replay(ctx context.Context, p *Policy, refs []RunRef, fetch Fetch, opts Options) (Report, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	perRun := make([][]Result, len(refs))
	progress := newProgress(opts.Progress, len(refs))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for i, ref := range refs {
		g.Go(func() error {
			run, err := fetch(ctx, ref)
			if err != nil {
				return fmt.Errorf("reading %s (run %s): %w", ref.WorkflowID, ref.RunID, err)
			}
			results, err := ReplayRun(ctx, p, run)
			if err != nil {
				return fmt.Errorf("replaying %s (run %s): %w", ref.WorkflowID, ref.RunID, err)
			}
			perRun[i] = results
			progress.add(len(results))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Report{}, err
	}
	progress.done()
	rep := Report{Summary: Summary{Runs: len(refs), RecordedPolicies: map[string]int{}}}
	for _, results := range perRun {
		for _, res := range results {
			rep.Results = append(rep.Results, res)
			rep.Summary.count(res)
		}
	}
	return rep, nil
}

// ReplayRun re-evaluates one run's reviewed calls.
func ReplayRun(ctx context.Context, p *Policy, run *runhistory.Run) ([]Result, error) {
	calls, err := Extract(run)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(calls))
	for i, c := range calls {
		candidate := p.Evaluate(ctx, c)
		out[i] = Result{Call: c, Candidate: candidate, Change: Compare(c.Recorded, candidate)}
		out[i].SkipReason = skipReason(&out[i])
	}
	return out, nil
}

// skipReason says why a call is skipped, and skips a change the policy
// cannot have made: the policy that recorded the verdict (same
// fingerprint) deciding otherwise here means this environment differs,
// not the policy.
func skipReason(r *Result) string {
	switch {
	case r.Change == ChangeSkipped && r.Recorded.Outcome == OutcomeUndecided:
		return "no recorded verdict (the run was canceled between stages or is still running)"
	case r.Change == ChangeSkipped:
		return r.Candidate.Reason
	case r.Change != ChangeUnchanged && r.Recorded.PolicyFingerprint != "" && r.Recorded.PolicyFingerprint == r.Candidate.PolicyFingerprint:
		r.Change = ChangeSkipped
		return fmt.Sprintf("the recorded policy (fingerprint %s) decides otherwise here: its hooks depend on this environment, which is not the worker's",
			r.Recorded.PolicyFingerprint)
	}
	return ""
}

func (s *Summary) count(res Result) {
	switch res.Change {
	case ChangeSkipped:
		s.Skipped++
		if s.Skips == nil {
			s.Skips = map[string]int{}
		}
		s.Skips[res.SkipReason]++
		return
	case ChangeNewlyBlocked:
		s.NewlyBlocked++
	case ChangeNewlyAllowed:
		s.NewlyAllowed++
	case ChangeInputChanged:
		s.InputChanged++
	default:
		s.Unchanged++
	}
	s.Replayed++
	s.RecordedPolicies[res.Recorded.PolicyFingerprint]++
}

// progress reports runs read and calls replayed on stderr.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	total int
	runs  int
	calls int
	last  time.Time
}

func newProgress(w io.Writer, total int) *progress { return &progress{w: w, total: total} }

func (p *progress) add(calls int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs++
	p.calls += calls
	if p.w != nil && time.Since(p.last) >= 500*time.Millisecond {
		p.last = time.Now()
		p.print()
	}
}

func (p *progress) done() {
	if p.w != nil {
		p.print()
	}
}

func (p *progress) print() {
	fmt.Fprintf(p.w, "policy-diff: %d/%d runs read, %d %s replayed\n", p.runs, p.total, p.calls, plural(p.calls, "call", "calls"))
}
