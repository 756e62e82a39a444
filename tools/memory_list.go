package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fenixrt/fenix/tools/memory"
)

func init() { register(memoryListTool()) }

// MemoryListArgs are memory_list's arguments.
type MemoryListArgs struct {
	Prefix string `json:"prefix,omitempty" jsonschema:"maxLength=64,description=Only keys starting with this prefix"`
}

// MemoryListResult is memory_list's raw result.
type MemoryListResult struct {
	Profile string           `json:"profile"`
	Entries []memory.Summary `json:"entries"`
	// Incomplete is set when the profile's directory held more than a
	// listing reads: some entries may be missing.
	Incomplete bool `json:"incomplete,omitempty"`
}

func memoryListTool() Definition {
	return Define(Spec{
		Name:           "memory_list",
		Description:    "List this agent profile's memory entries (key, title, last update), most recent first.",
		ReadOnly:       true,
		Idempotent:     true,
		Local:          true,
		NeedsWorkspace: true,
	}, func(_ context.Context, env *Env, a MemoryListArgs) (MemoryListResult, error) {
		profile := agentProfile(env)
		listing, err := memory.NewStore(env.Workspace).List(profile)
		if err != nil {
			return MemoryListResult{}, err
		}
		res := MemoryListResult{Profile: profile, Entries: []memory.Summary{}, Incomplete: listing.Incomplete}
		for _, s := range listing.Entries {
			if strings.HasPrefix(s.Key, a.Prefix) {
				res.Entries = append(res.Entries, s)
			}
		}
		return res, nil
	}, func(_ MemoryListArgs, r MemoryListResult) Projection {
		var b strings.Builder
		if len(r.Entries) == 0 {
			fmt.Fprintf(&b, "No memory entries for profile %s.", r.Profile)
		} else {
			fmt.Fprintf(&b, "Memory entries for profile %s:", r.Profile)
		}
		keys := make([]string, len(r.Entries))
		for i, e := range r.Entries {
			keys[i] = e.Key
			fmt.Fprintf(&b, "\n%d. %s", i+1, e.Key)
			if e.Title != "" {
				fmt.Fprintf(&b, " - %s", e.Title)
			}
			fmt.Fprintf(&b, " (updated %s, %s)", e.UpdatedAt.UTC().Format(time.RFC3339), byteSize(int64(e.Bytes)))
		}
		if r.Incomplete {
			fmt.Fprintf(&b, "\nThe memory directory %s holds more files than a listing reads, so some entries may be missing: remove the files there that are not entries.", memory.ProfileDir(r.Profile))
		}
		return Projection{
			Content:  b.String(),
			Metadata: map[string]any{"profile": r.Profile, "keys": keys, "count": len(r.Entries)},
		}
	})
}
