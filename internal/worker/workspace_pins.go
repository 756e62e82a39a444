package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/internal/readlimit"
)

// workspacePinsFile records, in the data directory, the scripts that the
// hooks of a settings file outside every project pinned at their first
// run in each workspace (see claudecode.WorkspacePinBook): a restart runs
// those copies, not what an agent has since written in the workspace. A
// SIGHUP or -accept-policy-change, which accept what is on disk, start
// the record afresh.
const workspacePinsFile = "workspace-pins.json"

// maxWorkspacePinsBytes bounds the record: a few hundred bytes per hook
// and workspace.
const maxWorkspacePinsBytes = 16 << 20

// readWorkspacePins reads the record; none when there is none. One that
// does not read is logged and started afresh: the pins are made again at
// the first run in each workspace.
func (w *Worker) readWorkspacePins() []claudecode.WorkspacePin {
	path := filepath.Join(w.cfg.DataDir, workspacePinsFile)
	data, err := readlimit.File(path, maxWorkspacePinsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var pins []claudecode.WorkspacePin
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err = dec.Decode(&pins)
	}
	if err != nil {
		w.cfg.Logger.Error("the record of hook scripts pinned in workspaces does not read; they are pinned again at their next first run", "file", path, "error", err)
		return nil
	}
	return pins
}

// newPinBook starts the book a policy's hooks record their workspace pins
// in; it saves to the data directory while it is the worker's book (a
// reload that replaced it must not be overwritten by the old policy's
// calls still in flight).
func (w *Worker) newPinBook(pins []claudecode.WorkspacePin) *claudecode.WorkspacePinBook {
	if w.cfg.DataDir == "" {
		return nil
	}
	var book *claudecode.WorkspacePinBook
	book = claudecode.NewWorkspacePinBook(pins, func(all []claudecode.WorkspacePin) error {
		w.pinsMu.Lock()
		defer w.pinsMu.Unlock()
		if w.pinBook != book {
			return nil
		}
		return w.writeWorkspacePins(all)
	})
	return book
}

// usePinBook makes book the worker's and records its pins.
func (w *Worker) usePinBook(book *claudecode.WorkspacePinBook) error {
	if book == nil {
		return nil
	}
	w.pinsMu.Lock()
	defer w.pinsMu.Unlock()
	w.pinBook = book
	return w.writeWorkspacePins(book.Pins())
}

func (w *Worker) writeWorkspacePins(pins []claudecode.WorkspacePin) error {
	if pins == nil {
		pins = []claudecode.WorkspacePin{}
	}
	if err := writeRecord(w.cfg.DataDir, workspacePinsFile, pins); err != nil {
		return fmt.Errorf("recording the hook scripts pinned in workspaces: %w", err)
	}
	return nil
}
