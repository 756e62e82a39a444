// Package skills is Fenix's skill catalog: discovery over three roots,
// loading, confined file reads, installation from directories and
// archives, and selection of the skills a round's messages refer to.
//
// A skill is a directory holding SKILL.md (YAML front matter with name and
// description, then Markdown) and any other files. The directory name must
// equal the front matter name.
//
// # Roots and precedence
//
// The catalog reads three roots, any of which may be unset or absent:
//
//	system     shipped with Fenix; always wins
//	curated    vetted by the operator of this deployment
//	installed  added at run time through Install
//
// A name found in several roots resolves to the first root in that order;
// the others are reported by Shadowed so nobody wonders why their copy is
// ignored. Names are compared case-insensitively for this, because skill
// directories may live on case-insensitive file systems. Install never
// shadows anything: it refuses a name that already exists in any root.
//
// Invalid skill directories (no SKILL.md, bad front matter, a directory
// name that differs from the skill name, a symlinked skill directory) are
// skipped and reported by Problems; one broken skill does not hide the
// rest. Directories starting with "." are ignored (Install stages there).
//
// # Confinement
//
// Every file access goes through os.Root opened on the skill root, so ".."
// and symlinks cannot leave a skill directory, and devices and FIFOs are
// refused. ReadFile also refuses ".." and absolute paths outright.
//
// # References
//
// Select scans message contents for "[$name](any-link)" and "$name" (see
// FindReferences for the exact rules: not inside words, not inside
// Markdown code) and loads each referenced skill. Tool results are not
// scanned. Unknown names are reported in Selection.Unknown, never fatal.
package skills

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/fenixrt/fenix/fenixerr"
)

// Kind is the root a skill comes from.
type Kind string

const (
	KindSystem    Kind = "system"
	KindCurated   Kind = "curated"
	KindInstalled Kind = "installed"
)

// Precedence lists the kinds from strongest to weakest.
var Precedence = []Kind{KindSystem, KindCurated, KindInstalled}

// Roots are the catalog's directories; an empty or absent one has no
// skills.
type Roots struct {
	System    string `json:"system,omitempty"`
	Curated   string `json:"curated,omitempty"`
	Installed string `json:"installed,omitempty"`
}

func (r Roots) dir(k Kind) string {
	switch k {
	case KindSystem:
		return r.System
	case KindCurated:
		return r.Curated
	}
	return r.Installed
}

// Entry is a skill's catalog line.
type Entry struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Source      Kind           `json:"source"`
	Dir         string         `json:"dir"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// Problem is a skill directory the catalog skipped.
type Problem struct {
	Source Kind   `json:"source"`
	Dir    string `json:"dir"`
	Error  string `json:"error"`
}

// FileInfo is one file of a skill package.
type FileInfo struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// Package is a loaded skill: its SKILL.md and the list of its files.
type Package struct {
	Entry
	SkillMD string     `json:"skill_md"`
	Files   []FileInfo `json:"files"`
	// FilesTruncated is set when the skill has more than MaxListedFiles
	// files.
	FilesTruncated bool `json:"files_truncated,omitempty"`
}

// File is the content of one file read from a skill.
type File struct {
	Skill     string `json:"skill"`
	Path      string `json:"path"`
	Content   string `json:"content"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated,omitempty"`
	// Binary is set when the file is not valid UTF-8; invalid bytes are
	// replaced with U+FFFD in Content.
	Binary bool `json:"binary,omitempty"`
}

// Limits of loading and reading.
const (
	MaxListedFiles  = 500
	MaxReadFileSize = 1 << 20
)

// Catalog is a snapshot of the skills in the roots. Install updates it;
// Reload rescans the roots (for skills another process installed). It is
// safe for concurrent use.
type Catalog struct {
	roots  Roots
	limits InstallLimits

	mu       sync.RWMutex
	byName   map[string]Entry // exact name -> entry
	byFold   map[string]Entry // lower-cased name -> entry, for collisions
	shadowed []Entry
	problems []Problem
}

// Option configures a Catalog.
type Option func(*Catalog)

// WithInstallLimits overrides the default install limits; zero fields keep
// their default.
func WithInstallLimits(l InstallLimits) Option {
	return func(c *Catalog) {
		if l.MaxEntries > 0 {
			c.limits.MaxEntries = l.MaxEntries
		}
		if l.MaxBytes > 0 {
			c.limits.MaxBytes = l.MaxBytes
		}
	}
}

// Open scans the roots. A root that is unset or does not exist is empty;
// a root that exists but cannot be read is an error.
func Open(roots Roots, opts ...Option) (*Catalog, error) {
	c := &Catalog{roots: roots, limits: DefaultInstallLimits}
	for _, o := range opts {
		o(c)
	}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Roots returns the catalog's roots.
func (c *Catalog) Roots() Roots { return c.roots }

// Reload rescans the roots.
func (c *Catalog) Reload() error {
	byName := map[string]Entry{}
	byFold := map[string]Entry{}
	var shadowed []Entry
	var problems []Problem
	for _, kind := range Precedence {
		entries, probs, err := scanRoot(kind, c.roots.dir(kind))
		if err != nil {
			return err
		}
		problems = append(problems, probs...)
		for _, e := range entries {
			fold := strings.ToLower(e.Name)
			if _, taken := byFold[fold]; taken {
				shadowed = append(shadowed, e)
				continue
			}
			byFold[fold] = e
			byName[e.Name] = e
		}
	}
	c.mu.Lock()
	c.byName, c.byFold, c.shadowed, c.problems = byName, byFold, shadowed, problems
	c.mu.Unlock()
	return nil
}

func scanRoot(kind Kind, dir string) ([]Entry, []Problem, error) {
	if dir == "" {
		return nil, nil, nil
	}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fenixerr.Validation("%s skills root %q cannot be opened: %v", kind, dir, err).WithCause(err)
	}
	defer root.Close()
	dirents, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, nil, fenixerr.Validation("%s skills root %q cannot be listed: %v", kind, dir, err).WithCause(err)
	}
	var entries []Entry
	var problems []Problem
	for _, d := range dirents {
		name := d.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		skillDir := filepath.Join(dir, name)
		if d.Type()&fs.ModeSymlink != 0 {
			problems = append(problems, Problem{kind, skillDir, "skill directory is a symlink; copy the skill instead"})
			continue
		}
		if !d.IsDir() {
			continue
		}
		m, err := readManifest(root, name)
		if err != nil {
			problems = append(problems, Problem{kind, skillDir, err.Error()})
			continue
		}
		if m.Name != name {
			problems = append(problems, Problem{kind, skillDir, fmt.Sprintf("directory %q holds skill %q: rename the directory or the skill so they match", name, m.Name)})
			continue
		}
		entries = append(entries, Entry{Name: m.Name, Description: m.Description, Source: kind, Dir: skillDir, Metadata: m.Metadata})
	}
	return entries, problems, nil
}

// readManifest reads and parses dirName/SKILL.md under root.
func readManifest(root *os.Root, dirName string) (Manifest, error) {
	rel := path.Join(dirName, ManifestFile)
	data, err := readRegular(root, rel, MaxManifestBytes)
	if err != nil {
		return Manifest{}, err
	}
	m, _, err := ParseManifest(data, rel)
	return m, err
}

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

// List returns the active skills sorted by name.
func (c *Catalog) List() []Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Entry, 0, len(c.byName))
	for _, e := range c.byName {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Shadowed returns skills hidden by a same-named skill in a stronger root.
func (c *Catalog) Shadowed() []Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.shadowed)
}

// Problems returns the skill directories that were skipped and why.
func (c *Catalog) Problems() []Problem {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.problems)
}

// Lookup returns the active skill with exactly this name.
func (c *Catalog) Lookup(name string) (Entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.byName[name]
	return e, ok
}

func (c *Catalog) entry(name string) (Entry, error) {
	e, ok := c.Lookup(name)
	if ok {
		return e, nil
	}
	if !ValidName(name) {
		return Entry{}, fenixerr.Validation("%q is not a valid skill name", name).WithCode("skill_not_found")
	}
	return Entry{}, fenixerr.Validation("skill %q is not in the catalog (roots: system %q, curated %q, installed %q)",
		name, c.roots.System, c.roots.Curated, c.roots.Installed).WithCode("skill_not_found")
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
