package claudecode

import (
	"fmt"
	"os"
	"slices"
	"sync"
)

// WorkspacePin is one command hook's scripts as pinned at its first run
// in a workspace (see workspacePins).
type WorkspacePin struct {
	// Settings is the settings file the hook is from.
	Settings string `json:"settings"`
	// Loaded is the command and its arguments as loaded (with what was
	// pinned at load): a reload that changes them pins afresh.
	Loaded    []string `json:"loaded"`
	Workspace string   `json:"workspace"`
	// Command and Args run the pinned copies.
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	// Absent are the scripts that did not exist at the first run.
	Absent []string `json:"absent,omitempty"`
	// Stored are the copies in the ScriptStore the command runs.
	Stored []string `json:"stored,omitempty"`
}

// WorkspacePinBook holds the workspace pins of a worker's policy and
// saves each new one (the worker keeps them in its data directory, next
// to the accepted policy). Without it a restart pinned again at the
// first run, from what an agent had meanwhile written in the workspace.
type WorkspacePinBook struct {
	mu   sync.Mutex
	pins []WorkspacePin
	save func([]WorkspacePin) error
}

// NewWorkspacePinBook starts a book with pins (those recorded before);
// save, when set, is given the whole book after each new pin.
func NewWorkspacePinBook(pins []WorkspacePin, save func([]WorkspacePin) error) *WorkspacePinBook {
	return &WorkspacePinBook{pins: slices.Clone(pins), save: save}
}

// Pins lists the book's pins (none in a nil book).
func (b *WorkspacePinBook) Pins() []WorkspacePin {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.pins)
}

// Stored lists the ScriptStore copies the book's pins run.
func (b *WorkspacePinBook) Stored() []string {
	var out []string
	for _, p := range b.Pins() {
		out = appendNew(out, p.Stored...)
	}
	return out
}

// find is the pin of the hook loaded as loaded from settings in
// workspace, when there is one.
func (b *WorkspacePinBook) find(settings string, loaded []string, workspace string) (WorkspacePin, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.pins {
		if p.Settings == settings && p.Workspace == workspace && slices.Equal(p.Loaded, loaded) {
			return p, true
		}
	}
	return WorkspacePin{}, false
}

// add records a new pin and saves the book.
func (b *WorkspacePinBook) add(p WorkspacePin) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pins = append(b.pins, p)
	if b.save == nil {
		return nil
	}
	return b.save(slices.Clone(b.pins))
}

// storedCopiesExist checks that a recorded pin's copies are still in the
// store: without them it cannot run as pinned.
func storedCopiesExist(p WorkspacePin) error {
	for _, dir := range p.Stored {
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("the copy of its scripts pinned at the first run in %s is gone (%s): reload the hooks (SIGHUP) to pin them again", p.Workspace, dir)
		}
	}
	return nil
}
