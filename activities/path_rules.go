package activities

import (
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workspace"
)

// judgeOpens judges each file a workspace tool opens by the permission
// rules' deny rules, on the path its symlinks reach at the open: the
// review judged the links as they were before the call ran, and a
// process the agent left running can repoint one in between. The call's
// own path must reach the file it reached when PreToolUse judged it
// (pinned, when recorded): allow and ask rules were judged on that file,
// and a link repointed to one they do not cover would otherwise skip an
// approval.
// judgeWorkspace holds env's workspace to the permission rules:
// workspace_list and workspace_search leave out what the rules keep from
// a read, and every file a tool opens is judged again on where its
// symlinks lead at the open (pinned to what PreToolUse judged, when it
// judged a path).
func (a *Activities) judgeWorkspace(env *tools.Env, pinned pinnedPath) {
	ws := env.Workspace
	if filter, ok := a.hookRegistry().PermissionPolicy().(hooks.PathFilter); ok && ws != nil {
		env.Hidden = func(rel string) bool { return filter.ReadDenied(ws.Dir(), rel, ws.ResolveLinks) }
		ws.SetJudge(judgeOpens(filter, ws.Dir(), pinned))
	}
}

func judgeOpens(filter hooks.PathFilter, root string, pinned pinnedPath) workspace.Judge {
	return func(access workspace.Access, asked, reached string) error {
		if pinned.asked != "" && asked == pinned.asked && reached != pinned.reached {
			return fenixerr.WorkspaceEscape("path %q led to %q when the call's permission was judged and leads to %q now: a symlink on the way changed, and the call is refused rather than run on a file it was not judged for", asked, pinned.reached, reached).WithCode("path_changed")
		}
		now := func(string) (string, error) { return reached, nil }
		denied := filter.ReadDenied
		if access == workspace.AccessWrite {
			denied = filter.WriteDenied
		}
		if !denied(root, asked, now) {
			return nil
		}
		if asked == reached {
			return fenixerr.New(fenixerr.TypePermissionDenied, "%s of %q is denied by a permission rule", access, asked)
		}
		return fenixerr.New(fenixerr.TypePermissionDenied, "%s of %q is denied by a permission rule: it now leads to %q through a symlink", access, asked, reached)
	}
}

// pinnedPath is a call's path and the file it reached when PreToolUse
// judged it; zero when none was recorded.
type pinnedPath struct{ asked, reached string }

// pinOf pins the call's "path" argument to reached, the file it led to at
// PreToolUse (ExecuteToolInput.ReachedPath).
func pinOf(args map[string]any, reached string) pinnedPath {
	p, _ := args["path"].(string)
	if reached == "" || p == "" {
		return pinnedPath{}
	}
	asked, err := workspace.Clean(p)
	if err != nil {
		return pinnedPath{}
	}
	return pinnedPath{asked: asked, reached: reached}
}

// reachedPath is the file a workspace tool's "path" argument leads to
// through the workspace's symlinks, resolved as the permission rules
// judge the call, so ExecuteTool can hold the open to it. Empty when no
// path rules are loaded, the tool works outside the workspace or takes no
// path, or the path cannot be resolved (the rules then asked, and the
// open is judged on its own).
func (a *Activities) reachedPath(root, tool string, args map[string]any) string {
	if _, ok := a.hookRegistry().PermissionPolicy().(hooks.PathFilter); !ok || a.Tools == nil {
		return ""
	}
	p, _ := args["path"].(string)
	if def, ok := a.Tools.Lookup(tool); !ok || !def.NeedsWorkspace || p == "" {
		return ""
	}
	ws, err := a.openWorkspace(root, false)
	if err != nil || ws == nil {
		return ""
	}
	defer ws.Close()
	reached, err := ws.ResolveLinks(p)
	if err != nil {
		return ""
	}
	return reached
}
