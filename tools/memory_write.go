package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/fenixrt/fenix/tools/memory"
)

func init() { register(memoryWriteTool()) }

// MemoryWriteArgs are memory_write's arguments.
type MemoryWriteArgs struct {
	Key     string `json:"key" jsonschema:"minLength=1,maxLength=64,pattern=^[a-z0-9][a-z0-9_.-]*$,description=Entry key: lowercase letters, digits, '.', '_' or '-' (for example project-notes)"`
	Title   string `json:"title,omitempty" jsonschema:"maxLength=200,description=One-line title shown in listings"`
	Content string `json:"content" jsonschema:"maxLength=65536,description=What to remember; replaces the entry's previous content"`
}

// MemoryWriteResult is memory_write's raw result.
type MemoryWriteResult struct {
	Profile   string    `json:"profile"`
	Key       string    `json:"key"`
	Title     string    `json:"title"`
	Bytes     int       `json:"bytes"`
	Created   bool      `json:"created"`
	UpdatedAt time.Time `json:"updated_at"`
	Path      string    `json:"path"`
}

func memoryWriteTool() Definition {
	return Define(Spec{
		Name:           "memory_write",
		Description:    "Save a memory entry for this agent profile under a key, replacing any previous entry with that key. Entries persist in the workspace across conversations.",
		Idempotent:     true,
		NeedsWorkspace: true,
	}, func(_ context.Context, env *Env, a MemoryWriteArgs) (MemoryWriteResult, error) {
		profile := agentProfile(env)
		e, created, err := memory.NewStore(env.Workspace).Write(profile, memory.Entry{Key: a.Key, Title: a.Title, Content: a.Content})
		if err != nil {
			return MemoryWriteResult{}, err
		}
		return MemoryWriteResult{
			Profile: profile, Key: e.Key, Title: e.Title, Bytes: len(e.Content), Created: created,
			UpdatedAt: e.UpdatedAt, Path: memory.ProfileDir(profile) + "/" + e.Key + ".json",
		}, nil
	}, func(_ MemoryWriteArgs, r MemoryWriteResult) Projection {
		verb := "Updated"
		if r.Created {
			verb = "Saved"
		}
		return Projection{
			Content: fmt.Sprintf("%s memory %s for profile %s (%d bytes).", verb, r.Key, r.Profile, r.Bytes),
			Metadata: map[string]any{
				"profile": r.Profile, "key": r.Key, "title": r.Title, "bytes": r.Bytes,
				"created": r.Created, "updated_at": r.UpdatedAt, "path": r.Path,
			},
		}
	})
}

// agentProfile is the calling agent's profile, "main" when unset.
func agentProfile(env *Env) string {
	if env.AgentProfile == "" {
		return "main"
	}
	return env.AgentProfile
}
