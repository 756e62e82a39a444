package workspace

import (
	"errors"

	"github.com/fenixrt/fenix/fenixerr"
)

// Access is what a tool does to a file it opens.
type Access uint8

const (
	// AccessRead opens a file to read it.
	AccessRead Access = iota
	// AccessWrite opens a file to write it.
	AccessWrite
)

func (a Access) String() string {
	if a == AccessWrite {
		return "write"
	}
	return "read"
}

// A Judge decides, at the moment a file is opened, whether a tool may
// open it: asked is the path as the tool named it, reached the path its
// symlinks lead to, resolved once. The open then goes to reached without
// following any symlink, so the file judged is the file opened.
//
// Permission rules are judged before a call runs, on the links as they
// were then; a symlink repointed between that judgement and the open
// (by a background process the agent started) would otherwise carry the
// call to a file the rules deny.
type Judge func(access Access, asked, reached string) error

// SetJudge makes j judge every ReadFile and WriteFile of this workspace.
// A workspace is opened per call; set it before the tool runs.
func (w *Workspace) SetJudge(j Judge) { w.judge = j }

// judged asks the judge, if any, about opening reached, the file cleaned
// leads to; a refusal that is not a Fenix error becomes a permission
// denial naming the path.
func (w *Workspace) judged(access Access, cleaned, reached string) error {
	if w.judge == nil {
		return nil
	}
	if err := w.judge(access, cleaned, reached); err != nil {
		var fe *fenixerr.Error
		if errors.As(err, &fe) {
			return err
		}
		return fenixerr.New(fenixerr.TypePermissionDenied, "%s of %q refused: %v", access, cleaned, err).WithCause(err)
	}
	return nil
}
