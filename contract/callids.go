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
