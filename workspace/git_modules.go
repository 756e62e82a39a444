package workspace

import (
	"errors"
	"io/fs"
	"path"
	"slices"
)

// Bounds on the walk of a git directory's modules: a repository with
// more submodules than this, or a tree the agent built to be walked
// without end (a symbolic link back up), gets its whole modules
// directory read-only instead, which keeps every submodule's hooks and
// config out of reach and costs only git's writes inside submodules.
const (
	maxSubmoduleGitDirs    = 256
	maxSubmoduleDirsListed = 1024
)

// gitDirMarkers are entries that make a directory under modules/ a git
// directory rather than a segment of a submodule's name (vendor/lib is
// modules/vendor/lib): git needs HEAD and objects, and a directory with
// only config or hooks is treated as one all the same, since those are
// what a command would plant there.
var gitDirMarkers = []string{"HEAD", "config", "hooks", "objects"}

// submoduleGitDirs are the git directories of the submodules under
// modules (a path in fsys, the modules directory of a git directory),
// nested submodules' included, sorted; whole is set instead when the walk
// met its bounds or a directory it could not list, and then modules
// itself must be held as a whole. Nothing when there is no modules
// directory.
func submoduleGitDirs(fsys fs.FS, modules string) (gitDirs []string, whole bool) {
	type listing struct {
		dir     string
		entries []fs.DirEntry
	}
	listed := 0
	list := func(dir string) ([]fs.DirEntry, error) {
		if listed++; listed > maxSubmoduleDirsListed {
			return nil, errors.New("too many directories")
		}
		return fs.ReadDir(fsys, dir)
	}
	top, err := list(modules)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	} else if err != nil {
		return nil, true
	}
	pending := []listing{{modules, top}}
	for len(pending) > 0 {
		l := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		for _, e := range l.entries {
			child := path.Join(l.dir, e.Name())
			if !e.IsDir() {
				// git follows a symbolic link under modules/ to a directory.
				if e.Type()&fs.ModeSymlink == 0 {
					continue
				}
				st, err := fs.Stat(fsys, child)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, true // a loop, or a target out of reach
				}
				if err != nil || !st.IsDir() {
					continue
				}
			}
			names, err := list(child)
			if err != nil {
				return nil, true
			}
			if !slices.ContainsFunc(names, func(n fs.DirEntry) bool { return slices.Contains(gitDirMarkers, n.Name()) }) {
				pending = append(pending, listing{child, names})
				continue
			}
			if gitDirs = append(gitDirs, child); len(gitDirs) > maxSubmoduleGitDirs {
				return nil, true
			}
			// A git directory keeps its own submodules in its modules/.
			nested, err := list(path.Join(child, "modules"))
			switch {
			case err == nil:
				pending = append(pending, listing{path.Join(child, "modules"), nested})
			case !errors.Is(err, fs.ErrNotExist):
				return nil, true
			}
		}
	}
	slices.Sort(gitDirs)
	return gitDirs, false
}

// submoduleGoverning is what commands may not write of the submodules
// whose git directories lie under gitDir/modules (gitDir a path in fsys):
// each one's governing files, as the repository's own, or the modules
// directory whole where the walk could not finish. A submodule's git
// directory without hooks gets an empty one (mkdir, when given), so
// there is something to mount on.
func submoduleGoverning(fsys fs.FS, gitDir string, mkdir func(dir string)) []string {
	modules := path.Join(gitDir, "modules")
	dirs, whole := submoduleGitDirs(fsys, modules)
	if whole {
		return []string{modules}
	}
	var out []string
	for _, dir := range dirs {
		if mkdir != nil {
			mkdir(path.Join(dir, "hooks"))
		}
		for _, f := range gitGoverning {
			out = append(out, path.Join(dir, f))
		}
	}
	return out
}
