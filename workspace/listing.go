package workspace

// Listing directories: every open of a directory the agent can change is
// O_DIRECTORY|O_NONBLOCK, so a FIFO in its place fails the listing at
// once instead of blocking it on a writer that never comes.

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/fenixrt/fenix/fenixerr"
)

// ListingFS is root.FS() whose directory listings open with openDir: a
// walk of a tree the agent can change (a FIFO swapped in for a
// directory it already saw) fails that directory instead of hanging.
func ListingFS(root *os.Root) fs.FS { return listingFS{root: root, FS: root.FS()} }

type listingFS struct {
	root *os.Root
	fs.FS
}

func (l listingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	f, err := openDir(l.root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, translate(name, err)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// Stat keeps the root's stat, which opens nothing.
func (l listingFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(l.FS, name) }

// ReadDir lists a directory, sorted by name.
func (w *Workspace) ReadDir(rel string) ([]fs.DirEntry, string, error) {
	cleaned, err := Clean(rel)
	if err != nil {
		return nil, "", err
	}
	entries, err := ListingFS(w.root).(fs.ReadDirFS).ReadDir(cleaned)
	return entries, cleaned, err
}

// openDir opens a directory for listing, refusing anything else without
// blocking: opening a FIFO for reading waits for a writer, which an agent
// that put one where a directory was (or swapped one in between a
// parent's listing and this open) never sends.
func openDir(root *os.Root, cleaned string) (*os.File, error) {
	f, err := root.OpenFile(cleaned, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, fenixerr.Validation("path %q is not a directory (or goes through something that is not one)", cleaned).WithCode("not_directory").WithCause(err)
	}
	if err != nil {
		return nil, translate(cleaned, err)
	}
	return f, nil
}

// ReadDirLimit lists at most n entries of a directory (n > 0), sorted by
// name, and reports whether it has more. Which n it returns of a larger
// directory is the file system's order, not the first n names: finding
// those would mean reading every entry, and a bounded listing (the
// Operator State) must not cost more with a directory of 100,000 files
// than with one of 1,000.
func (w *Workspace) ReadDirLimit(rel string, n int) (entries []fs.DirEntry, more bool, cleaned string, err error) {
	if cleaned, err = Clean(rel); err != nil {
		return nil, false, "", err
	}
	f, err := openDir(w.root, cleaned)
	if err != nil {
		return nil, false, cleaned, err
	}
	defer f.Close()
	entries, err = f.ReadDir(max(n, 1))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, cleaned, translate(cleaned, err)
	}
	if len(entries) == max(n, 1) {
		next, err := f.ReadDir(1)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false, cleaned, translate(cleaned, err)
		}
		more = len(next) > 0
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, more, cleaned, nil
}
