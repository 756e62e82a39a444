package audit

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventPermissionDecision rows record a human's (or the approval
// timeout's) answer to a call that waited for permission. Status is the
// decision ("allow"/"deny"); OutputPreview holds the Decision as JSON.
const EventPermissionDecision = "PERMISSION_DECISION"

// Decision is what a PERMISSION_DECISION row records.
type Decision struct {
	Decision string `json:"decision"`
	// Decider is who decided: an inbox token's name, the CLI user, or
	// "timeout".
	Decider string    `json:"decider"`
	Source  string    `json:"source"`
	At      time.Time `json:"decided_at"`
	// ArgsHash is the hash of the arguments the decision approved.
	ArgsHash          string `json:"args_hash"`
	PolicyFingerprint string `json:"policy_fingerprint,omitempty"`
	Reason            string `json:"reason,omitempty"`
}

// DecisionRow fills base (session, run, call, tool) as a
// PERMISSION_DECISION row. The reason is shortened so the JSON fits
// MaxOutputPreviewBytes and stays parseable.
func DecisionRow(base Row, d Decision) (Row, error) {
	base.Event = EventPermissionDecision
	base.Status = d.Decision
	base.ArgsHash = d.ArgsHash
	base.CreatedAt = d.At
	d.Reason = cleanText(d.Reason)
	for {
		raw, err := json.Marshal(d)
		if err != nil {
			return Row{}, fmt.Errorf("encoding the decision on call %q: %w", base.CallID, err)
		}
		if len(raw) <= MaxOutputPreviewBytes {
			base.OutputPreview = string(raw)
			return base, nil
		}
		if d.Reason == "" {
			return Row{}, fmt.Errorf("the decision on call %q does not fit an audit row (%d bytes > %d): decider or hashes too long", base.CallID, len(raw), MaxOutputPreviewBytes)
		}
		d.Reason = Preview(d.Reason, max(0, len(d.Reason)-(len(raw)-MaxOutputPreviewBytes)-len(ellipsis)))
	}
}

// ParseDecision reads a PERMISSION_DECISION row back.
func ParseDecision(r Row) (Decision, error) {
	if r.Event != EventPermissionDecision {
		return Decision{}, fmt.Errorf("audit row %s is a %s row, not %s", r.Key(), r.Event, EventPermissionDecision)
	}
	var d Decision
	if err := json.Unmarshal([]byte(r.OutputPreview), &d); err != nil {
		return Decision{}, fmt.Errorf("audit row %s: decision is not valid JSON: %w", r.Key(), err)
	}
	return d, nil
}
