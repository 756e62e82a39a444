package tools

import (
	"context"
	"fmt"
)

func init() { register(workspaceWriteTool()) }

// maxWorkspaceWriteBytes keeps a write's arguments well under Temporal's
// 2 MiB payload limit.
const maxWorkspaceWriteBytes = 1 << 20

// WorkspaceWriteArgs are workspace_write's arguments.
type WorkspaceWriteArgs struct {
	Path    string `json:"path" jsonschema:"minLength=1,maxLength=4096,description=File path relative to the workspace root; parent directories are created"`
	Content string `json:"content" jsonschema:"maxLength=1048576,description=The complete new content of the file"`
}

// WorkspaceWriteResult is workspace_write's raw result.
type WorkspaceWriteResult struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created"`
}

func workspaceWriteTool() Definition {
	return Define(Spec{
		Name:           "workspace_write",
		Description:    "Create or overwrite a text file in the workspace with the given content.",
		Idempotent:     true,
		NeedsWorkspace: true,
		MaxArgBytes:    maxWorkspaceWriteBytes + 16<<10,
	}, writeWorkspaceFile, func(_ WorkspaceWriteArgs, r WorkspaceWriteResult) Projection {
		verb := "Overwrote"
		if r.Created {
			verb = "Created"
		}
		return Projection{
			Content:  fmt.Sprintf("%s workspace file %s (%d bytes).", verb, r.Path, r.Bytes),
			Metadata: map[string]any{"path": r.Path, "bytes": r.Bytes, "created": r.Created},
		}
	})
}

func writeWorkspaceFile(_ context.Context, env *Env, a WorkspaceWriteArgs) (WorkspaceWriteResult, error) {
	_, _, statErr := env.Workspace.Stat(a.Path)
	path, err := env.Workspace.WriteFile(a.Path, []byte(a.Content), maxWorkspaceWriteBytes)
	if err != nil {
		return WorkspaceWriteResult{}, err
	}
	return WorkspaceWriteResult{Path: path, Bytes: len(a.Content), Created: statErr != nil}, nil
}
