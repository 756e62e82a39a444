package claudecode

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fenixrt/fenix/internal/readlimit"
)

// Limits of one pinned directory: a hook's directory holds scripts, not a
// project.
const (
	maxPinnedFiles = 512
	maxPinnedBytes = 16 << 20
)

// skippedPinDirs are subdirectories not copied with a script's directory.
var skippedPinDirs = map[string]bool{"node_modules": true, "__pycache__": true, ".git": true, "logs": true}

// pinnedFile is one file of a pinned tree.
type pinnedFile struct {
	rel  string
	exec bool
	data []byte
}

// pinnedTree is a script directory as read at load.
type pinnedTree struct {
	// source is the directory it was read from.
	source string
	// launched are the files commands launch from it, always included.
	launched []string
	// alone is set for a script in the project's or plugin's root, copied
	// without the rest of the root.
	alone bool
	files []pinnedFile
	// packages are the node_modules directories under source (relative
	// names): too large to copy, they are linked from the copy, so a
	// script's require() and import still find its packages.
	packages []string
	hash     string
	// stored is where the copy lives; "" without a store.
	stored string
}

// configExtensions mark files a script may read next to itself: its
// configuration and the data its checks use (a blocklist.txt, rules.csv,
// a prompt.md). A guard that cannot find them in its pinned copy fails,
// and a failing hook that does not block lets the call through.
var configExtensions = []string{".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".env",
	".txt", ".md", ".csv", ".tsv", ".xml", ".list", ".lst", ".re", ".regex", ".rules", ".tmpl", ".template", ".j2", ".sql", ".properties"}

// pinnable reports whether a file of a script directory is copied with
// it: scripts and executables (what a script imports or runs), config and
// data files (what it reads), and files without an extension (a
// "blocklist"); logs (*.log, *.jsonl, logs/) and other output a script
// writes next to itself are not policy, so they are neither copied nor
// fingerprinted.
func pinnable(name string, mode fs.FileMode) bool {
	if mode&0o111 != 0 || hasScriptExtension(name) || filepath.Ext(name) == "" {
		return true
	}
	for _, ext := range configExtensions {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// pinTooLargeError is a script directory past the limits of one pinned
// tree.
type pinTooLargeError struct{ dir string }

func (e *pinTooLargeError) Error() string {
	return fmt.Sprintf("hook script directory %s holds more than %d files or %d bytes, or more than %d entries with its links followed; keep hook scripts in a directory of their own", e.dir, maxPinnedFiles, maxPinnedBytes, maxPinnedEntries)
}

// readTree reads the pinnable files of dir and the launched ones (or,
// when alone is set, just the launched ones). Links are followed: a
// script, helper or lib/ directory linked into dir (from a dotfiles
// checkout, a tools/ directory) is copied as what it leads to, which is
// what the script reads when it runs; left out, the copy misses it and a
// guard that cannot load its helper fails, which lets the call through
// unless the hook blocks on failure.
func readTree(dir string, launched []string, alone bool) (*pinnedTree, error) {
	t := &pinnedTree{source: dir, launched: launched, alone: alone}
	// The tree is read where dir leads: a hooks directory reached through
	// a symlink is pinned like any other (walking the link itself would
	// read nothing and leave its scripts running from the project).
	root := dir
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		root = real
	}
	r := &treeReader{t: t, walking: map[string]bool{}}
	if alone {
		for _, name := range launched {
			path := filepath.Join(root, name)
			info, err := os.Stat(path)
			if err != nil || !info.Mode().IsRegular() {
				return nil, fmt.Errorf("hook script %s: not a regular file", path)
			}
			if err := r.add(path, name, info); err != nil {
				return nil, err
			}
		}
	} else if err := r.walk(root, ""); err != nil {
		return nil, err
	}
	t.sortAndHash()
	return t, nil
}

// maxPinnedEntries bounds the directory entries one tree's walk looks at:
// a link to / or to a large checkout ends the walk as too large instead of
// reading the disk.
const maxPinnedEntries = 8192

// treeReader reads one tree's files.
type treeReader struct {
	t        *pinnedTree
	total    int
	examined int
	// walking are the real directories being walked, so a link back to
	// one of them (lib/loop -> ..) ends there.
	walking map[string]bool
}

// add copies one file into the tree.
func (r *treeReader) add(path, rel string, info fs.FileInfo) error {
	if len(r.t.files) >= maxPinnedFiles {
		return &pinTooLargeError{dir: r.t.source}
	}
	data, err := readlimit.File(path, int64(maxPinnedBytes-r.total))
	if errors.As(err, new(*readlimit.TooLargeError)) {
		return &pinTooLargeError{dir: r.t.source}
	}
	if err != nil {
		return fmt.Errorf("hook script %s: %w", path, err)
	}
	r.total += len(data)
	r.t.files = append(r.t.files, pinnedFile{rel: rel, exec: info.Mode()&0o111 != 0, data: data})
	return nil
}

// walk adds the pinnable files under dir (named rel in the tree),
// following links to files and directories.
func (r *treeReader) walk(dir, rel string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("hook script directory %s: %w", dir, err)
	}
	if r.walking[real] {
		return nil
	}
	r.walking[real] = true
	defer delete(r.walking, real)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("hook script directory %s: %w", dir, err)
	}
	for _, e := range entries {
		if r.examined++; r.examined > maxPinnedEntries {
			return &pinTooLargeError{dir: r.t.source}
		}
		path, name := filepath.Join(dir, e.Name()), e.Name()
		relName := name
		if rel != "" {
			relName = rel + "/" + name
		}
		info, err := os.Stat(path)
		if err != nil {
			if e.Type()&fs.ModeSymlink != 0 {
				continue // a dangling link (or a loop of links): nothing to copy
			}
			return fmt.Errorf("hook script %s: %w", path, err)
		}
		switch {
		case info.IsDir() && name == "node_modules":
			r.t.packages = append(r.t.packages, relName)
		case info.IsDir() && !strings.HasPrefix(name, ".") && !skippedPinDirs[name]:
			if err := r.walk(path, relName); err != nil {
				return err
			}
		case info.Mode().IsRegular() && (pinnable(name, info.Mode()) || slices.Contains(r.t.launched, relName)):
			if err := r.add(path, relName, info); err != nil {
				return err
			}
		}
	}
	return nil
}

// sortAndHash orders the files by name and names the tree by them.
func (t *pinnedTree) sortAndHash() {
	slices.SortFunc(t.files, func(a, b pinnedFile) int { return strings.Compare(a.rel, b.rel) })
	t.computeHash()
}

// computeHash names the tree by its content: relative names, executable
// bits, bytes and where its packages are linked from.
func (t *pinnedTree) computeHash() {
	h := sha256.New()
	for _, f := range t.files {
		mode := "-"
		if f.exec {
			mode = "x"
		}
		fmt.Fprintf(h, "%d:%s%s%d:", len(f.rel), f.rel, mode, len(f.data))
		h.Write(f.data)
	}
	for _, rel := range t.packages {
		// The link's target is the source's: two projects with the same
		// scripts and their own packages get their own copies.
		target := t.packageDir(rel)
		fmt.Fprintf(h, "%d:%s@%d:%s", len(rel), rel, len(target), target)
	}
	t.hash = hex.EncodeToString(h.Sum(nil))
}

// packageDir is where a node_modules directory of the tree lives.
func (t *pinnedTree) packageDir(rel string) string {
	return filepath.Join(t.source, filepath.FromSlash(rel))
}

func (t *pinnedTree) has(rel string) bool {
	for _, f := range t.files {
		if f.rel == rel {
			return true
		}
	}
	return false
}
