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
		all, err := memory.NewStore(env.Workspace).List(profile)
		if err != nil {
			return MemoryListResult{}, err
		}
		res := MemoryListResult{Profile: profile, Entries: []memory.Summary{}}
		for _, s := range all {
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
		return Projection{
			Content:  b.String(),
			Metadata: map[string]any{"profile": r.Profile, "keys": keys, "count": len(r.Entries)},
		}
	})
}
