package contract

import "strconv"

// CallIDRename is one call whose ID repeated an earlier call's ID in the
// same model answer and was renamed.
type CallIDRename struct {
	Index int    `json:"index"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// UniqueCallIDs renames repeated call IDs in place, deterministically: the
// first call keeps its ID, the n-th repeat becomes "<id>#n" (skipping
// names already taken), so each call has its own approval, audit row and
// observation. Empty IDs are left for the caller to fill.
func UniqueCallIDs(calls []ToolCall) []CallIDRename {
	taken := make(map[string]bool, len(calls))
	for _, c := range calls {
		taken[c.CallID] = true
	}
	seen := make(map[string]int, len(calls))
	var renames []CallIDRename
	for i := range calls {
		id := calls[i].CallID
		if id == "" {
			continue
		}
		seen[id]++
		if seen[id] == 1 {
			continue
		}
		n := seen[id]
		to := id + "#" + strconv.Itoa(n)
		for taken[to] {
			n++
			to = id + "#" + strconv.Itoa(n)
		}
		seen[id] = n
		taken[to] = true
		calls[i].CallID = to
		renames = append(renames, CallIDRename{Index: i, From: id, To: to})
	}
	return renames
}

// RenameReusedCallIDs renames the calls of one model answer whose IDs an
// earlier answer of the same run used (in used): "x" becomes the first of
// "x#2", "x#3", … that neither used nor the answer holds. It then adds
// every call's ID to used. Run after UniqueCallIDs, it leaves every call
// of a run with its own ID. A renamed call's index and model ID are in
// the renames.
func RenameReusedCallIDs(calls []ToolCall, used map[string]bool) []CallIDRename {
	taken := func(id string) bool {
		if used[id] {
			return true
		}
		for _, c := range calls {
			if c.CallID == id {
				return true
			}
		}
		return false
	}
	var renames []CallIDRename
	for i := range calls {
		id := calls[i].CallID
		if !used[id] {
			continue
		}
		n := 2
		to := id + "#" + strconv.Itoa(n)
		for taken(to) {
			n++
			to = id + "#" + strconv.Itoa(n)
		}
		calls[i].CallID = to
		renames = append(renames, CallIDRename{Index: i, From: id, To: to})
	}
	for _, c := range calls {
		used[c.CallID] = true
	}
	return renames
}

// OversizedName is a model's call ID or tool name over MaxIDBytes and the
// placeholder that replaced it.
type OversizedName struct {
	Index int    `json:"index"`
	Field string `json:"field"`
	Bytes int    `json:"bytes"`
	To    string `json:"to"`
}

// BoundToolCalls replaces, in place, each call ID and tool name of a
// model's answer that is over MaxIDBytes by a short placeholder: every
// stage, trace entry and report repeats them, and a megabyte-long one
// would overflow the history limits. No tool has such a name, so the call
// fails review as an unsupported tool and the model is told; an oversized
// call ID is renamed as a repeated one is (run UniqueCallIDs after it).
func BoundToolCalls(calls []ToolCall) []OversizedName {
	var out []OversizedName
	for i := range calls {
		for _, f := range []struct {
			name string
			v    *string
		}{{"call_id", &calls[i].CallID}, {"tool_name", &calls[i].ToolName}} {
			if len(*f.v) <= MaxIDBytes {
				continue
			}
			n := len(*f.v)
			*f.v = oversizedPlaceholder(*f.v)
			out = append(out, OversizedName{Index: i, Field: f.name, Bytes: n, To: *f.v})
		}
	}
	return out
}
