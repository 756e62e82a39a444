package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fenixrt/fenix/tools/memory"
)

func init() { register(memoryReadTool()) }

// MemoryReadArgs are memory_read's arguments.
type MemoryReadArgs struct {
	Key string `json:"key" jsonschema:"minLength=1,maxLength=64,pattern=^[a-z0-9][a-z0-9_.-]*$,description=Key of the entry to read (memory_list shows them)"`
}

// MemoryReadResult is memory_read's raw result.
type MemoryReadResult struct {
	Profile   string    `json:"profile"`
	Key       string    `json:"key"`
	Title     string    `json:"title"`
	Content   string    `json:"content"`
	UpdatedAt time.Time `json:"updated_at"`
}

func memoryReadTool() Definition {
	return Define(Spec{
		Name:           "memory_read",
		Description:    "Read one of this agent profile's memory entries by key.",
		ReadOnly:       true,
		Idempotent:     true,
		Local:          true,
		NeedsWorkspace: true,
	}, func(_ context.Context, env *Env, a MemoryReadArgs) (MemoryReadResult, error) {
		profile := agentProfile(env)
		e, err := memory.NewStore(env.Workspace).Read(profile, a.Key)
		if err != nil {
			return MemoryReadResult{}, err
		}
		return MemoryReadResult{Profile: profile, Key: e.Key, Title: e.Title, Content: e.Content, UpdatedAt: e.UpdatedAt}, nil
	}, func(_ MemoryReadArgs, r MemoryReadResult) Projection {
		var b strings.Builder
		fmt.Fprintf(&b, "Memory %s", r.Key)
		if r.Title != "" {
			fmt.Fprintf(&b, " (%s)", r.Title)
		}
		fmt.Fprintf(&b, ", updated %s:\n%s", r.UpdatedAt.UTC().Format(time.RFC3339), r.Content)
		return Projection{
			Content:  b.String(),
			Metadata: map[string]any{"profile": r.Profile, "key": r.Key, "title": r.Title, "updated_at": r.UpdatedAt, "bytes": len(r.Content)},
		}
	})
}
