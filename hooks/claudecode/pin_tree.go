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
	return fmt.Sprintf("hook script directory %s holds more than %d files or %d bytes; keep hook scripts in a directory of their own", e.dir, maxPinnedFiles, maxPinnedBytes)
}

// readTree reads the pinnable files of dir and the launched ones (or,
// when alone is set, just the launched ones).
func readTree(dir string, launched []string, alone bool) (*pinnedTree, error) {
	t := &pinnedTree{source: dir, launched: launched, alone: alone}
	// The tree is read where dir leads: a hooks directory reached through
	// a symlink is pinned like any other (walking the link itself would
	// read nothing and leave its scripts running from the project).
	root := dir
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		root = real
	}
	var total int
	add := func(path string, info fs.FileInfo) error {
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if len(t.files) >= maxPinnedFiles {
			return &pinTooLargeError{dir: dir}
		}
		data, err := readlimit.File(path, int64(maxPinnedBytes-total))
		if errors.As(err, new(*readlimit.TooLargeError)) {
			return &pinTooLargeError{dir: dir}
		}
		if err != nil {
			return fmt.Errorf("hook script %s: %w", path, err)
		}
		total += len(data)
		t.files = append(t.files, pinnedFile{rel: filepath.ToSlash(rel), exec: info.Mode()&0o111 != 0, data: data})
		return nil
	}
	if alone {
		for _, name := range launched {
			path := filepath.Join(root, name)
			info, err := os.Lstat(path)
			if err != nil || !info.Mode().IsRegular() {
				return nil, fmt.Errorf("hook script %s: not a regular file", path)
			}
			if err := add(path, info); err != nil {
				return nil, err
			}
		}
	} else {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && d.Name() == "node_modules" {
					rel, _ := filepath.Rel(root, path)
					t.packages = append(t.packages, filepath.ToSlash(rel))
				}
				if path != root && (strings.HasPrefix(d.Name(), ".") || skippedPinDirs[d.Name()]) {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil // symlinks and devices are not copied
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if rel, _ := filepath.Rel(root, path); !pinnable(d.Name(), info.Mode()) && !slices.Contains(launched, rel) {
				return nil
			}
			return add(path, info)
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(t.files, func(a, b pinnedFile) int { return strings.Compare(a.rel, b.rel) })
	t.computeHash()
	return t, nil
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
