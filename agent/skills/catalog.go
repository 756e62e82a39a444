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
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

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
