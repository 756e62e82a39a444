package policydiff

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fenixrt/fenix/contract"
)

// Link builds the Web UI address of a run.
type Link func(workflowID, runID string) string

// changeLabel is "allow → block" for outcome changes.
func changeLabel(r Result) string {
	if r.Change == ChangeInputChanged {
		return "input changed"
	}
	return fmt.Sprintf("%s → %s", r.Recorded.Outcome, r.Candidate.Outcome)
}

// MaxWidth bounds the table's lines unless WriteText is asked for -wide
// output.
const MaxWidth = 120

// fitColumns cuts cells until a table's rows, with gap runes between
// columns, fit in width: first column first down to firstMin runes (the
// workflow ID: the call ID and the run's link still name it), then every
// column to a common cap, the largest that fits.
func fitColumns(rows [][]string, gap, width, first, firstMin int) {
	if len(rows) == 0 {
		return
	}
	natural := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			natural[i] = max(natural[i], len([]rune(c)))
		}
	}
	total := func(limit int) int {
		sum := gap * (len(natural) - 1)
		for _, n := range natural {
			sum += min(n, limit)
		}
		return sum
	}
	if over := total(slices.Max(natural)) - width; over > 0 {
		natural[first] = max(firstMin, natural[first]-over, 1)
	}
	limit := slices.Max(natural)
	for limit > 1 && total(limit) > width {
		limit--
	}
	for _, r := range rows {
		for i := range r {
			n := limit
			if i == first {
				n = min(limit, natural[first])
			}
			r[i] = shorten(r[i], n)
		}
	}
}

// WriteText prints the changed calls as a table, then the skipped calls
// by reason, which policies made the recorded decisions, and the summary
// line. The table names who decided and keeps within MaxWidth columns,
// cutting the widest cells; wide adds the reasons, the recorded policy and
// each run's Web UI address.
func WriteText(w io.Writer, rep Report, link Link, wide bool) error {
	changes := rep.Changes()
	if len(changes) == 0 {
		fmt.Fprintln(w, "No recorded call changes its verdict under the candidate policy.")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		rows := [][]string{{"CHANGE", "WORKFLOW", "STEP", "CALL", "TOOL", "RECORDED", "CANDIDATE"}}
		if wide {
			rows[0] = []string{"CHANGE", "WORKFLOW", "STEP", "CALL", "TOOL", "RECORDED", "RECORDED POLICY", "CANDIDATE", "WEB UI"}
		}
		reasons := reasonsNone
		if wide {
			reasons = reasonsFull
		}
		for _, r := range changes {
			step := "-"
			if r.Step > 0 {
				step = strconv.Itoa(r.Step)
			}
			recorded := r.Recorded.text(reasons)
			if r.HumanDecision != "" {
				recorded += ", then " + r.HumanDecision
			}
			row := []string{changeLabel(r), r.WorkflowID, step, r.ToolCall.CallID, r.ToolCall.ToolName, recorded, r.Candidate.text(reasons)}
			if wide {
				row = []string{row[0], row[1], row[2], row[3], row[4], row[5], orNone(r.Recorded.PolicyFingerprint), row[6], link(r.WorkflowID, r.RunID)}
			}
			for i := range row {
				row[i] = contract.Printable(row[i])
			}
			rows = append(rows, row)
		}
		if !wide {
			fitColumns(rows, 2, MaxWidth, 1, 16)
		}
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if !wide {
			fmt.Fprintln(w, "(-wide: the reasons, the recorded policy and Web UI links)")
		}
		fmt.Fprintln(w)
	}
	writeSkips(w, rep.Summary.Skips, wide)
	fmt.Fprintf(w, "Recorded verdicts by policy: %s.\n", policyCounts(rep.Summary.RecordedPolicies))
	fmt.Fprintf(w, "Candidate verdicts by policy: %s.\n", policyCounts(candidatePolicies(rep)))
	_, err := fmt.Fprintln(w, rep.Summary.Line())
	return err
}

// writeSkips lists why calls could not be re-decided, most frequent first.
func writeSkips(w io.Writer, skips map[string]int, wide bool) {
	if len(skips) == 0 {
		return
	}
	reasons := make([]string, 0, len(skips))
	for r := range skips {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if skips[reasons[i]] != skips[reasons[j]] {
			return skips[reasons[i]] > skips[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	fmt.Fprintln(w, "Skipped, not re-decided faithfully here:")
	for _, r := range reasons {
		line := fmt.Sprintf("  %d × %s", skips[r], contract.Printable(r))
		if !wide {
			line = shorten(line, MaxWidth)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
}

// Line is the summary: "N calls replayed, A newly blocked, B newly
// allowed, C unchanged", with input changes and skipped calls when any.
func (s Summary) Line() string {
	parts := []string{fmt.Sprintf("%d calls replayed", s.Replayed), fmt.Sprintf("%d newly blocked", s.NewlyBlocked),
		fmt.Sprintf("%d newly allowed", s.NewlyAllowed)}
	if s.InputChanged > 0 {
		parts = append(parts, fmt.Sprintf("%d with changed updatedInput", s.InputChanged))
	}
	parts = append(parts, fmt.Sprintf("%d unchanged", s.Unchanged))
	line := strings.Join(parts, ", ")
	if s.Skipped > 0 {
		line += fmt.Sprintf(" (%d skipped: not re-decided faithfully here)", s.Skipped)
	}
	return line
}

func candidatePolicies(rep Report) map[string]int {
	out := map[string]int{}
	for _, r := range rep.Results {
		if r.Change != ChangeSkipped {
			out[r.Candidate.PolicyFingerprint]++
		}
	}
	return out
}

// policyCounts renders "5c1f0f3b7d2a9e41 (3 calls), unrecorded (1 call)".
func policyCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none (no calls)"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d %s)", orNone(k), m[k], plural(m[k], "call", "calls"))
	}
	return strings.Join(parts, ", ")
}

func orNone(fp string) string {
	if fp == "" {
		return "unrecorded"
	}
	return fp
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// jsonChange is one changed call in -json output.
type jsonChange struct {
	Change       Change         `json:"change"`
	WorkflowID   string         `json:"workflow_id"`
	RunID        string         `json:"run_id"`
	WorkflowType string         `json:"workflow_type"`
	Step         int            `json:"step,omitempty"`
	CallID       string         `json:"call_id"`
	ToolName     string         `json:"tool_name"`
	Arguments    map[string]any `json:"arguments"`
	Recorded     Verdict        `json:"recorded"`
	// HumanDecision is how a recorded ask was answered.
	HumanDecision string  `json:"human_decision,omitempty"`
	Candidate     Verdict `json:"candidate"`
	WebUI         string  `json:"web_ui"`
}

// jsonSkip is one skipped call in -json output.
type jsonSkip struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	CallID     string `json:"call_id"`
	ToolName   string `json:"tool_name"`
	Reason     string `json:"reason"`
}

// WriteJSON prints the same as WriteText as one JSON object:
// {"changes": [...], "skipped": [...], "summary": {...}}.
func WriteJSON(w io.Writer, rep Report, link Link) error {
	out := struct {
		Changes []jsonChange `json:"changes"`
		Skipped []jsonSkip   `json:"skipped"`
		Summary Summary      `json:"summary"`
	}{Changes: []jsonChange{}, Skipped: []jsonSkip{}, Summary: rep.Summary}
	for _, r := range rep.Results {
		if r.Change == ChangeSkipped {
			out.Skipped = append(out.Skipped, jsonSkip{WorkflowID: r.WorkflowID, RunID: r.RunID, CallID: r.ToolCall.CallID,
				ToolName: r.ToolCall.ToolName, Reason: r.SkipReason})
		}
	}
	for _, r := range rep.Changes() {
		out.Changes = append(out.Changes, jsonChange{Change: r.Change, WorkflowID: r.WorkflowID, RunID: r.RunID, WorkflowType: r.WorkflowType,
			Step: r.Step, CallID: r.ToolCall.CallID, ToolName: r.ToolCall.ToolName, Arguments: r.ToolCall.Arguments,
			Recorded: r.Recorded, HumanDecision: r.HumanDecision, Candidate: r.Candidate, WebUI: link(r.WorkflowID, r.RunID)})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
