package tools

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

func init() { register(workspaceReadTool()) }

// defaultReadBytes keeps a default read well inside the activity's 1 MiB
// result limit.
const defaultReadBytes = 256 << 10

// WorkspaceReadArgs are workspace_read's arguments.
type WorkspaceReadArgs struct {
	Path     string `json:"path" jsonschema:"minLength=1,maxLength=4096,description=File path relative to the workspace root"`
	MaxBytes int64  `json:"max_bytes,omitempty" jsonschema:"minimum=1,maximum=1048576,description=Read at most this many bytes (default 256 KiB)"`
}

// WorkspaceReadResult is workspace_read's raw result.
type WorkspaceReadResult struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated"`
	// Binary is set when the file was not valid UTF-8; invalid bytes are
	// replaced with U+FFFD in Content.
	Binary bool `json:"binary,omitempty"`
}

func workspaceReadTool() Definition {
	return Define(Spec{
		Name:           "workspace_read",
		Description:    "Read a text file from the workspace.",
		ReadOnly:       true,
		Idempotent:     true,
		Local:          true,
		NeedsWorkspace: true,
	}, func(_ context.Context, env *Env, a WorkspaceReadArgs) (WorkspaceReadResult, error) {
		maxBytes := a.MaxBytes
		if maxBytes == 0 {
			maxBytes = defaultReadBytes
		}
		r, err := env.Workspace.ReadFile(a.Path, maxBytes)
		if err != nil {
			return WorkspaceReadResult{}, err
		}
		content, binary := textOf(r.Content)
		content, clipped := clipForJSON(content, resultTextBudget)
		return WorkspaceReadResult{Path: r.Path, Content: content, Size: r.Size, Truncated: r.Truncated || clipped, Binary: binary}, nil
	}, func(_ WorkspaceReadArgs, r WorkspaceReadResult) Projection {
		var b strings.Builder
		fmt.Fprintf(&b, "Workspace file %s:\n%s", r.Path, r.Content)
		if r.Truncated {
			fmt.Fprintf(&b, "\n[truncated: showed %d of %d bytes]", len(r.Content), r.Size)
		}
		return Projection{
			Content:  b.String(),
			Metadata: map[string]any{"path": r.Path, "size": r.Size, "truncated": r.Truncated, "binary": r.Binary},
		}
	})
}

// textOf returns b as a string, replacing invalid UTF-8 so the result can
// travel as JSON.
func textOf(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), true
}
