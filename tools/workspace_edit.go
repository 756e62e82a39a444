package tools

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/fenixrt/fenix/fenixerr"
)

func init() { register(workspaceEditTool()) }

// maxEditFileBytes is the largest file workspace_edit rewrites.
const maxEditFileBytes = 4 << 20

// WorkspaceEditArgs are workspace_edit's arguments.
type WorkspaceEditArgs struct {
	Path       string `json:"path" jsonschema:"minLength=1,maxLength=4096,description=File path relative to the workspace root"`
	OldString  string `json:"old_string" jsonschema:"minLength=1,maxLength=262144,description=Exact text to replace; it must occur exactly once unless replace_all is set"`
	NewString  string `json:"new_string" jsonschema:"maxLength=262144,description=Replacement text"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"description=Replace every occurrence instead of requiring exactly one"`
}

// WorkspaceEditResult is workspace_edit's raw result.
type WorkspaceEditResult struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	BytesBefore  int    `json:"bytes_before"`
	BytesAfter   int    `json:"bytes_after"`
	// Line is where the first replacement starts (1-based).
	Line int `json:"line"`
}

func workspaceEditTool() Definition {
	return Define(Spec{
		Name:           "workspace_edit",
		Description:    "Edit a text file in the workspace by replacing an exact string. Fails when old_string is missing, or occurs more than once without replace_all.",
		NeedsWorkspace: true,
		MaxArgBytes:    600 << 10,
	}, editWorkspaceFile, func(_ WorkspaceEditArgs, r WorkspaceEditResult) Projection {
		noun := "occurrence"
		if r.Replacements != 1 {
			noun = "occurrences"
		}
		return Projection{
			Content: fmt.Sprintf("Edited workspace file %s: replaced %d %s (first at line %d); the file is now %d bytes.", r.Path, r.Replacements, noun, r.Line, r.BytesAfter),
			Metadata: map[string]any{
				"path": r.Path, "replacements": r.Replacements, "line": r.Line,
				"bytes_before": r.BytesBefore, "bytes_after": r.BytesAfter,
			},
		}
	})
}

func editWorkspaceFile(_ context.Context, env *Env, a WorkspaceEditArgs) (WorkspaceEditResult, error) {
	if a.OldString == a.NewString {
		return WorkspaceEditResult{}, fenixerr.Validation("old_string and new_string are identical: nothing would change in %q", a.Path)
	}
	r, err := env.Workspace.ReadFile(a.Path, maxEditFileBytes)
	if err != nil {
		return WorkspaceEditResult{}, err
	}
	if r.Truncated {
		return WorkspaceEditResult{}, fenixerr.PayloadTooLarge("file %q is %d bytes; workspace_edit rewrites files up to %d bytes", r.Path, r.Size, maxEditFileBytes)
	}
	if !utf8.Valid(r.Content) {
		return WorkspaceEditResult{}, fenixerr.Validation("file %q is not valid UTF-8 text; workspace_edit only edits text files", r.Path).WithCode("not_text")
	}
	content := string(r.Content)
	count := strings.Count(content, a.OldString)
	switch {
	case count == 0:
		return WorkspaceEditResult{}, fenixerr.Validation("old_string was not found in %q: read the file and copy the exact text, whitespace included", r.Path).WithCode("old_string_not_found")
	case count > 1 && !a.ReplaceAll:
		return WorkspaceEditResult{}, fenixerr.Validation("old_string occurs %d times in %q: include more surrounding text to make it unique, or set replace_all", count, r.Path).WithCode("old_string_ambiguous")
	}
	line := strings.Count(content[:strings.Index(content, a.OldString)], "\n") + 1
	// count is 1 here unless replace_all is set. The result's size is known
	// before it is built: a one-byte old_string in a 4 MiB file replaced by
	// 256 KiB would otherwise take a terabyte of the worker's memory before
	// the write's own size check ran.
	if size := int64(len(content)) + int64(count)*(int64(len(a.NewString))-int64(len(a.OldString))); size > maxEditFileBytes {
		return WorkspaceEditResult{}, fenixerr.PayloadTooLarge("replacing old_string (%d occurrences) in %q would make the file %d bytes; workspace_edit writes files up to %d bytes", count, r.Path, size, maxEditFileBytes)
	}
	updated := strings.ReplaceAll(content, a.OldString, a.NewString)
	if _, err := env.Workspace.WriteFile(r.Path, []byte(updated), maxEditFileBytes); err != nil {
		return WorkspaceEditResult{}, err
	}
	return WorkspaceEditResult{Path: r.Path, Replacements: count, BytesBefore: len(content), BytesAfter: len(updated), Line: line}, nil
}
