package activities

import (
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/workspace"
)

// judgeOpens judges each file a workspace tool opens by the permission
// rules' deny rules, on the path its symlinks reach at the open: the
// review judged the links as they were before the call ran, and a
// process the agent left running can repoint one in between.
func judgeOpens(filter hooks.PathFilter, root string) workspace.Judge {
	return func(access workspace.Access, asked, reached string) error {
		pinned := func(string) (string, error) { return reached, nil }
		denied := filter.ReadDenied
		if access == workspace.AccessWrite {
			denied = filter.WriteDenied
		}
		if !denied(root, asked, pinned) {
			return nil
		}
		if asked == reached {
			return fenixerr.New(fenixerr.TypePermissionDenied, "%s of %q is denied by a permission rule", access, asked)
		}
		return fenixerr.New(fenixerr.TypePermissionDenied, "%s of %q is denied by a permission rule: it now leads to %q through a symlink", access, asked, reached)
	}
}
