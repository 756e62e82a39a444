package tools

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/fenixrt/fenix/fenixerr"
)

func init() { register(workspaceListTool()) }

// WorkspaceListArgs are workspace_list's arguments.
type WorkspaceListArgs struct {
	Path       string `json:"path,omitempty" jsonschema:"maxLength=4096,description=Directory relative to the workspace root (default: the root)"`
	Recursive  bool   `json:"recursive,omitempty" jsonschema:"description=List subdirectories too (symlinks are listed, never followed; .git is not descended into)"`
	MaxEntries int    `json:"max_entries,omitempty" jsonschema:"minimum=1,maximum=5000,description=Stop after this many entries (default 500)"`
}

// WorkspaceEntry is one listed path.
type WorkspaceEntry struct {
	Path string `json:"path"`
	// Type is file, dir, symlink, fifo, socket, device or other.
	Type string `json:"type"`
	Size int64  `json:"size,omitempty"`
	// Target is a symlink's target as stored.
	Target string `json:"target,omitempty"`
}

// WorkspaceListResult is workspace_list's raw result.
type WorkspaceListResult struct {
	Path      string           `json:"path"`
	Entries   []WorkspaceEntry `json:"entries"`
	Truncated bool             `json:"truncated"`
	// Hidden counts the entries a permission rule hides (Env.Hidden),
	// which are left out unnamed; a hidden directory counts once.
	Hidden int `json:"hidden,omitempty"`
}

func workspaceListTool() Definition {
	return Define(Spec{
		Name:           "workspace_list",
		Description:    "List files and directories in the workspace, optionally recursively.",
		ReadOnly:       true,
		Idempotent:     true,
		Local:          true,
		NeedsWorkspace: true,
	}, listWorkspace, projectWorkspaceList)
}

func listWorkspace(ctx context.Context, env *Env, a WorkspaceListArgs) (WorkspaceListResult, error) {
	info, dir, err := env.Workspace.Stat(a.Path)
	if err != nil {
		return WorkspaceListResult{}, err
	}
	if !info.IsDir() {
		return WorkspaceListResult{}, fenixerr.Validation("path %q is a file, not a directory: use workspace_read to read it", dir).WithCode("not_directory")
	}
	limit := a.MaxEntries
	if limit == 0 {
		limit = 500
	}
	res := WorkspaceListResult{Path: dir, Entries: []WorkspaceEntry{}}
	errStop := fs.SkipAll
	err = fs.WalkDir(env.Workspace.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p == dir {
			return err
		}
		if err != nil {
			// An unreadable subdirectory is listed but not entered.
			return nil
		}
		if env.hidden(p) {
			res.Hidden++
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if len(res.Entries) >= limit {
			res.Truncated = true
			return errStop
		}
		res.Entries = append(res.Entries, describeEntry(env, p, d))
		if d.IsDir() && (!a.Recursive || d.Name() == ".git") {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return WorkspaceListResult{}, fenixerr.As(err)
	}
	return res, nil
}

func describeEntry(env *Env, p string, d fs.DirEntry) WorkspaceEntry {
	e := WorkspaceEntry{Path: p, Type: entryType(d.Type())}
	switch e.Type {
	case "file":
		if info, err := d.Info(); err == nil {
			e.Size = info.Size()
		}
	case "symlink":
		if target, err := env.Workspace.Readlink(p); err == nil {
			e.Target = target
		}
	}
	return e
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "other"
	}
}

func projectWorkspaceList(_ WorkspaceListArgs, r WorkspaceListResult) Projection {
	var b strings.Builder
	noun := "entries"
	if len(r.Entries) == 1 {
		noun = "entry"
	}
	fmt.Fprintf(&b, "Workspace directory %s (%d %s", r.Path, len(r.Entries), noun)
	if r.Truncated {
		b.WriteString(", truncated")
	}
	if r.Hidden > 0 {
		fmt.Fprintf(&b, ", %d hidden by permission rules", r.Hidden)
	}
	b.WriteString("):")
	for _, e := range r.Entries {
		name := e.Path
		if r.Path != "." {
			if rel, ok := strings.CutPrefix(e.Path, r.Path+"/"); ok {
				name = rel
			}
		}
		switch e.Type {
		case "dir":
			fmt.Fprintf(&b, "\n%s/", name)
		case "file":
			fmt.Fprintf(&b, "\n%s (%s)", name, byteSize(e.Size))
		case "symlink":
			fmt.Fprintf(&b, "\n%s -> %s", name, e.Target)
		default:
			fmt.Fprintf(&b, "\n%s (%s)", name, e.Type)
		}
	}
	if len(r.Entries) == 0 {
		b.WriteString("\n(empty)")
	}
	return Projection{
		Content:  b.String(),
		Metadata: map[string]any{"path": r.Path, "count": len(r.Entries), "truncated": r.Truncated, "hidden": r.Hidden},
	}
}
