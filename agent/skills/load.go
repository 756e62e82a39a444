package skills

// Reading a skill: loading its package (SKILL.md and its file list) and
// reading its files, every access through os.Root on the skill's
// directory so nothing outside it is reached.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/fenixrt/fenix/fenixerr"
)

// readRegular reads a regular file through root, refusing devices and
// FIFOs without blocking on them, and files over limit bytes.
func readRegular(root *os.Root, rel string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, rootError("", rel, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, rootError("", rel, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fenixerr.Validation("%s is not a regular file", rel)
	}
	if info.Size() > limit {
		return nil, fenixerr.PayloadTooLarge("%s is %d bytes; the limit is %d", rel, info.Size(), limit)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// rootError turns os.Root errors into Fenix errors naming skill and path.
func rootError(skill, rel string, err error) error {
	what := fmt.Sprintf("path %q", rel)
	if skill != "" {
		what = fmt.Sprintf("skill %q path %q", skill, rel)
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "path escapes from parent"):
		return fenixerr.WorkspaceEscape("%s resolves outside the skill directory (through \"..\" or a symlink)", what).WithCause(err)
	case errors.Is(err, syscall.ELOOP):
		return fenixerr.WorkspaceEscape("%s is a symlink loop", what).WithCause(err)
	case errors.Is(err, fs.ErrNotExist):
		return fenixerr.Validation("%s does not exist", what).WithCode("not_found").WithCause(err)
	case errors.Is(err, fs.ErrPermission):
		return fenixerr.Validation("%s is not readable: permission denied", what).WithCode("permission_denied").WithCause(err)
	}
	return fenixerr.Runtime("reading %s failed: %v", what, err).WithCause(err)
}

// openSkill opens the skill's directory as a root, through its catalog
// root so a skill directory swapped for a symlink is still confined.
func (c *Catalog) openSkill(e Entry) (*os.Root, error) {
	parent, err := os.OpenRoot(c.roots.dir(e.Source))
	if err != nil {
		return nil, fenixerr.Runtime("%s skills root for skill %q cannot be opened: %v", e.Source, e.Name, err).WithCause(err)
	}
	defer parent.Close()
	root, err := parent.OpenRoot(filepath.Base(e.Dir))
	if err != nil {
		return nil, rootError(e.Name, ".", err)
	}
	return root, nil
}

// Load reads a skill's SKILL.md and lists its regular files (symlinks are
// neither listed nor followed).
func (c *Catalog) Load(name string) (Package, error) {
	e, err := c.entry(name)
	if err != nil {
		return Package{}, err
	}
	root, err := c.openSkill(e)
	if err != nil {
		return Package{}, err
	}
	defer root.Close()
	data, err := readRegular(root, ManifestFile, MaxManifestBytes)
	if err != nil {
		return Package{}, fmt.Errorf("loading skill %q: %w", name, err)
	}
	if _, _, err := ParseManifest(data, e.Dir+"/"+ManifestFile); err != nil {
		return Package{}, err
	}
	pkg := Package{Entry: e, SkillMD: string(data)}
	pkg.Files, pkg.FilesTruncated, err = listSkillFiles(root)
	if err != nil {
		return Package{}, fenixerr.Runtime("listing files of skill %q in %s: %v", name, e.Dir, err).WithCause(err)
	}
	return pkg, nil
}

// maxDirEntries bounds how many entries of one directory Load reads. A
// directory with more shows that many of them (the file system's order,
// sorted) and the listing is marked truncated: listing MaxListedFiles
// files must not read all of a directory of 100,000 (0.8 s per round that
// referred to the skill).
var maxDirEntries = 4096

// listSkillFiles lists the regular files under root depth-first in
// lexical order (as fs.WalkDir does; symlinks are neither listed nor
// followed), at most MaxListedFiles of them, reading at most maxDirEntries
// entries of each directory.
func listSkillFiles(root *os.Root) (files []FileInfo, truncated bool, err error) {
	var walk func(dir string) error
	walk = func(dir string) error {
		f, err := root.Open(dir)
		if err != nil {
			return err
		}
		entries, err := f.ReadDir(maxDirEntries)
		if err == nil && len(entries) == maxDirEntries {
			var next []fs.DirEntry
			next, err = f.ReadDir(1)
			truncated = truncated || len(next) > 0
		}
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, d := range entries {
			p := path.Join(dir, d.Name())
			if d.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			if !d.Type().IsRegular() {
				continue
			}
			if len(files) == MaxListedFiles {
				truncated = true
				return fs.SkipAll
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			files = append(files, FileInfo{Path: p, Size: info.Size()})
		}
		return nil
	}
	if err := walk("."); err != nil && !errors.Is(err, fs.SkipAll) {
		return nil, false, err
	}
	return files, truncated, nil
}

// CleanRelative validates a path relative to a skill directory and
// returns it in canonical slash form. It refuses empty, absolute and
// NUL-containing paths and any ".." segment, even one that would stay
// inside, so the rule is easy to state.
func CleanRelative(skill, rel string) (string, error) {
	switch {
	case rel == "":
		return "", fenixerr.Validation("skill %q: relative_path is empty", skill)
	case strings.ContainsRune(rel, 0):
		return "", fenixerr.Validation("skill %q: path %q contains a NUL byte", skill, rel)
	case strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.IsAbs(rel) || hasDriveLetter(rel):
		return "", fenixerr.WorkspaceEscape("skill %q: path %q is absolute; give a path relative to the skill directory", skill, rel)
	}
	for _, seg := range strings.FieldsFunc(rel, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return "", fenixerr.WorkspaceEscape("skill %q: path %q contains \"..\"; paths must stay inside the skill directory", skill, rel)
		}
	}
	return path.Clean(rel), nil
}

func hasDriveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0]|0x20 && p[0]|0x20 <= 'z')
}

// ReadFile reads one file of a skill, at most MaxReadFileSize bytes of it.
func (c *Catalog) ReadFile(name, rel string) (File, error) {
	e, err := c.entry(name)
	if err != nil {
		return File{}, err
	}
	cleaned, err := CleanRelative(name, rel)
	if err != nil {
		return File{}, err
	}
	root, err := c.openSkill(e)
	if err != nil {
		return File{}, err
	}
	defer root.Close()
	f, err := root.OpenFile(cleaned, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return File{}, rootError(name, cleaned, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return File{}, rootError(name, cleaned, err)
	}
	if !info.Mode().IsRegular() {
		return File{}, fenixerr.Validation("skill %q path %q is not a regular file (mode %s)", name, cleaned, info.Mode().Type()).WithCode("not_regular_file")
	}
	buf, err := io.ReadAll(io.LimitReader(f, MaxReadFileSize+1))
	if err != nil {
		return File{}, rootError(name, cleaned, err)
	}
	out := File{Skill: name, Path: cleaned, Size: info.Size()}
	if len(buf) > MaxReadFileSize {
		buf, out.Truncated = buf[:MaxReadFileSize], true
	}
	if out.Truncated {
		buf = trimPartialRune(buf)
	}
	out.Content = string(buf)
	if !utf8.ValidString(out.Content) {
		out.Content, out.Binary = strings.ToValidUTF8(out.Content, "\uFFFD"), true
	}
	return out, nil
}

// trimPartialRune drops a multi-byte character cut in half at the end of
// a truncated read, so a text file does not look binary because of it.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}
