package skills

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/workspace"
)

// InstallLimits bound what one Install may unpack. They count what is
// actually written, not what archive headers claim.
type InstallLimits struct {
	// MaxEntries caps files plus directories.
	MaxEntries int `json:"max_entries"`
	// MaxBytes caps the total size of the files.
	MaxBytes int64 `json:"max_bytes"`
}

// DefaultInstallLimits fit any reasonable skill.
var DefaultInstallLimits = InstallLimits{MaxEntries: 1000, MaxBytes: 32 << 20}

// Install copies a skill from a local directory or a .tar.gz, .tgz or .zip
// archive into the installed root and adds it to the catalog.
//
// SKILL.md must be at the top of the source or inside its single
// top-level directory. Archives may hold only regular files and
// directories: symlinks, hard links, devices and FIFOs are refused, as are
// absolute paths and ".." segments. A directory source may not contain
// symlinks either; its .git directory is skipped. The skill is unpacked in
// a staging directory inside the installed root and renamed into place, so
// a failed install leaves nothing behind and a reader never sees half a
// skill.
//
// source is a host path; resolve workspace-relative paths before calling.
// A source the caller has confined (an agent's workspace) is opened by
// the caller and given to InstallOpened, so no name is resolved twice.
func (c *Catalog) Install(source string, opts ...InstallOption) (Entry, error) {
	if c.roots.Installed == "" {
		return Entry{}, fenixerr.Validation("cannot install skill from %q: no installed skills root is configured", source)
	}
	info, err := os.Stat(source)
	if err != nil {
		return Entry{}, fenixerr.Validation("skill source %q cannot be read: %v", source, err).WithCause(err)
	}
	if info.IsDir() {
		dir, err := os.OpenRoot(source)
		if err != nil {
			return Entry{}, fenixerr.Validation("skill source directory %q cannot be opened: %v", source, err).WithCause(err)
		}
		defer dir.Close()
		return c.InstallOpened(source, OpenedSource{Dir: dir}, opts...)
	}
	f, err := os.OpenFile(source, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Entry{}, fenixerr.Validation("skill archive %q cannot be opened: %v", source, err).WithCause(err)
	}
	defer f.Close()
	return c.InstallOpened(source, OpenedSource{Archive: f}, opts...)
}

// OpenedSource is a skill source already opened: a directory or an
// archive file (.tar.gz, .tgz or .zip by its name), one of the two.
type OpenedSource struct {
	Dir     *os.Root
	Archive *os.File
}

// InstallOpened is Install from a source the caller opened; source names
// it (its kind of archive by its suffix) and in messages. What is copied
// is what the handles reach, whatever the name leads to by now.
func (c *Catalog) InstallOpened(source string, src OpenedSource, opts ...InstallOption) (Entry, error) {
	if c.roots.Installed == "" {
		return Entry{}, fenixerr.Validation("cannot install skill from %q: no installed skills root is configured", source)
	}
	var unpack func(*extractor) error
	switch lower := strings.ToLower(source); {
	case src.Dir != nil:
		unpack = func(x *extractor) error { return x.copyDir(src.Dir) }
	case src.Archive == nil:
		return Entry{}, fenixerr.Validation("skill source %q was not opened", source)
	case !isRegular(src.Archive):
		return Entry{}, fenixerr.Validation("skill source %q is neither a directory nor a regular archive file", source)
	case strings.HasSuffix(lower, ".tar.gz") || strings.HasSuffix(lower, ".tgz"):
		unpack = func(x *extractor) error { return x.untar(src.Archive) }
	case strings.HasSuffix(lower, ".zip"):
		unpack = func(x *extractor) error { return x.unzip(src.Archive) }
	default:
		return Entry{}, fenixerr.Validation("skill source %q is neither a directory nor a .tar.gz, .tgz or .zip archive", source)
	}

	if err := os.MkdirAll(c.roots.Installed, 0o755); err != nil {
		return Entry{}, fenixerr.Runtime("creating installed skills root %q: %v", c.roots.Installed, err).WithCause(err)
	}
	installed, err := os.OpenRoot(c.roots.Installed)
	if err != nil {
		return Entry{}, fenixerr.Runtime("opening installed skills root %q: %v", c.roots.Installed, err).WithCause(err)
	}
	defer installed.Close()
	staging, err := os.MkdirTemp(c.roots.Installed, ".install-*")
	if err != nil {
		return Entry{}, fenixerr.Runtime("creating a staging directory in %q: %v", c.roots.Installed, err).WithCause(err)
	}
	defer os.RemoveAll(staging)
	// MkdirTemp makes it 0700; a flat archive's skill directory is the
	// staging directory itself, so give it the usual directory mode.
	if err := os.Chmod(staging, 0o755); err != nil {
		return Entry{}, fenixerr.Runtime("preparing staging directory %q: %v", staging, err).WithCause(err)
	}
	stagingRoot, err := os.OpenRoot(staging)
	if err != nil {
		return Entry{}, fenixerr.Runtime("opening staging directory %q: %v", staging, err).WithCause(err)
	}
	defer stagingRoot.Close()

	x := &extractor{source: source, dst: stagingRoot, limits: c.limits}
	for _, o := range opts {
		o(x)
	}
	if err := unpack(x); err != nil {
		return Entry{}, err
	}
	skillRel, err := locateManifest(stagingRoot, source)
	if err != nil {
		return Entry{}, err
	}
	data, err := readRegular(stagingRoot, path.Join(skillRel, ManifestFile), MaxManifestBytes)
	if err != nil {
		return Entry{}, fmt.Errorf("skill source %q: %w", source, err)
	}
	m, _, err := ParseManifest(data, fmt.Sprintf("%s in %q", ManifestFile, source))
	if err != nil {
		return Entry{}, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if existing, taken := c.byFold[strings.ToLower(m.Name)]; taken {
		return Entry{}, collision(m.Name, existing)
	}
	for _, e := range c.shadowed {
		if strings.EqualFold(e.Name, m.Name) {
			return Entry{}, collision(m.Name, e)
		}
	}
	if _, err := installed.Lstat(m.Name); err == nil {
		return Entry{}, fenixerr.Validation("skill %q cannot be installed: %q already exists in the installed root %q (an invalid skill? see the catalog's problems)",
			m.Name, m.Name, c.roots.Installed).WithCode("skill_exists")
	}
	if err := installed.Rename(path.Join(filepath.Base(staging), skillRel), m.Name); err != nil {
		return Entry{}, fenixerr.Runtime("moving skill %q into %q: %v", m.Name, c.roots.Installed, err).WithCause(err)
	}
	e := Entry{Name: m.Name, Description: m.Description, Source: KindInstalled, Dir: filepath.Join(c.roots.Installed, m.Name), Metadata: m.Metadata}
	c.byName[e.Name] = e
	c.byFold[strings.ToLower(e.Name)] = e
	return e, nil
}

// isRegular reports whether an opened file is a regular file (not a FIFO,
// a device or a directory).
func isRegular(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode().IsRegular()
}

func collision(name string, existing Entry) error {
	if existing.Name == name {
		return fenixerr.Validation("skill %q is already installed from the %s root (%s)", name, existing.Source, existing.Dir).WithCode("skill_exists")
	}
	return fenixerr.Validation("skill %q collides with skill %q from the %s root (%s): names must differ in more than case",
		name, existing.Name, existing.Source, existing.Dir).WithCode("skill_exists")
}

// locateManifest finds the skill directory in the staging tree: the top
// itself, or its single top-level directory.
func locateManifest(root *os.Root, source string) (string, error) {
	if _, err := root.Lstat(ManifestFile); err == nil {
		return ".", nil
	}
	dirents, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return "", fenixerr.Runtime("listing unpacked skill from %q: %v", source, err).WithCause(err)
	}
	if len(dirents) == 1 && dirents[0].IsDir() {
		if _, err := root.Lstat(path.Join(dirents[0].Name(), ManifestFile)); err == nil {
			return dirents[0].Name(), nil
		}
	}
	return "", fenixerr.Validation("skill source %q has no %s at its top level or in a single top-level directory", source, ManifestFile)
}

// InstallOption adjusts one Install.
type InstallOption func(*extractor)

// RefuseReadDenied makes an install from a directory refuse an entry
// denied reports (its path relative to the source, slash-separated):
// the permission rules' Read deny verdict, so a file the agent may not
// read is not copied where a skill's files are read in full.
func RefuseReadDenied(denied func(rel string) bool) InstallOption {
	return func(x *extractor) { x.denied = denied }
}

// extractor writes validated entries into the staging root and enforces
// the limits.
type extractor struct {
	source  string
	dst     *os.Root
	limits  InstallLimits
	denied  func(rel string) bool
	entries int
	bytes   int64
}

// cleanEntry validates an archive entry name and returns it relative to
// the archive top ("" for the top itself).
func (x *extractor) cleanEntry(name string) (string, error) {
	switch {
	case name == "":
		return "", fenixerr.Validation("archive %q has an entry with an empty name", x.source)
	case strings.ContainsRune(name, 0):
		return "", fenixerr.Validation("archive %q entry %q contains a NUL byte", x.source, name)
	case strings.Contains(name, `\`):
		return "", fenixerr.Validation("archive %q entry %q contains a backslash; use '/' as the separator", x.source, name)
	case strings.HasPrefix(name, "/") || hasDriveLetter(name):
		return "", fenixerr.WorkspaceEscape("archive %q entry %q is an absolute path; entries must be relative", x.source, name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." {
			return "", fenixerr.WorkspaceEscape("archive %q entry %q contains \"..\"; entries must stay inside the skill", x.source, name)
		}
	}
	cleaned := path.Clean(name)
	if cleaned == "." {
		return "", nil
	}
	return cleaned, nil
}

func (x *extractor) count(name string) error {
	x.entries++
	if x.entries > x.limits.MaxEntries {
		return fenixerr.PayloadTooLarge("skill source %q has more than %d files and directories (at %q)", x.source, x.limits.MaxEntries, name)
	}
	return nil
}

func (x *extractor) mkdir(name string) error {
	if name == "" {
		return nil
	}
	if err := x.count(name); err != nil {
		return err
	}
	if err := x.dst.MkdirAll(name, 0o755); err != nil {
		return fenixerr.Validation("skill source %q: cannot create directory %q: %v", x.source, name, err).WithCause(err)
	}
	return nil
}

func (x *extractor) writeFile(name string, r io.Reader, mode fs.FileMode) error {
	if name == "" {
		return fenixerr.Validation("skill source %q has a file entry naming the top directory", x.source)
	}
	if err := x.count(name); err != nil {
		return err
	}
	if dir := path.Dir(name); dir != "." {
		if err := x.dst.MkdirAll(dir, 0o755); err != nil {
			return fenixerr.Validation("skill source %q: cannot create directory for %q: %v", x.source, name, err).WithCause(err)
		}
	}
	// Only the executable bit survives: scripts stay runnable, nothing
	// becomes setuid or world-writable.
	perm := fs.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := x.dst.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return fenixerr.Validation("skill source %q contains %q more than once", x.source, name)
	}
	if err != nil {
		return fenixerr.Validation("skill source %q: cannot create %q: %v", x.source, name, err).WithCause(err)
	}
	remaining := x.limits.MaxBytes - x.bytes
	n, err := io.Copy(f, io.LimitReader(r, remaining+1))
	x.bytes += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fenixerr.Validation("skill source %q: cannot unpack %q: %v", x.source, name, err).WithCause(err)
	}
	if n > remaining {
		return fenixerr.PayloadTooLarge("skill source %q unpacks to more than %d bytes (at %q)", x.source, x.limits.MaxBytes, name)
	}
	return nil
}

func (x *extractor) refuse(name, what string) error {
	return fenixerr.Validation("skill source %q entry %q is %s; skills may contain only regular files and directories", x.source, name, what).WithCode("unsupported_entry")
}

func (x *extractor) untar(f *os.File) error {
	archive := x.source
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fenixerr.Validation("skill archive %q is not gzip-compressed: %v", archive, err).WithCause(err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fenixerr.Validation("skill archive %q is not a readable tar.gz: %v", archive, err).WithCause(err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name, err := x.cleanEntry(hdr.Name)
		if err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = x.mkdir(name)
		case tar.TypeReg:
			err = x.writeFile(name, tr, hdr.FileInfo().Mode())
		case tar.TypeSymlink:
			err = x.refuse(hdr.Name, "a symlink to "+fmt.Sprintf("%q", hdr.Linkname))
		case tar.TypeLink:
			err = x.refuse(hdr.Name, "a hard link to "+fmt.Sprintf("%q", hdr.Linkname))
		case tar.TypeChar, tar.TypeBlock:
			err = x.refuse(hdr.Name, "a device")
		case tar.TypeFifo:
			err = x.refuse(hdr.Name, "a FIFO")
		default:
			err = x.refuse(hdr.Name, fmt.Sprintf("of unsupported tar type %q", hdr.Typeflag))
		}
		if err != nil {
			return err
		}
	}
}

func (x *extractor) unzip(f *os.File) error {
	archive := x.source
	info, err := f.Stat()
	if err != nil {
		return fenixerr.Validation("skill archive %q cannot be read: %v", archive, err).WithCause(err)
	}
	zr, err := zip.NewReader(f, info.Size())
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return fenixerr.Validation("skill archive %q is not a readable zip: %v", archive, err).WithCause(err)
	}
	if len(zr.File) > x.limits.MaxEntries {
		return fenixerr.PayloadTooLarge("skill archive %q has %d entries; at most %d are installed", archive, len(zr.File), x.limits.MaxEntries)
	}
	for _, zf := range zr.File {
		name, err := x.cleanEntry(zf.Name)
		if err != nil {
			return err
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			err = x.mkdir(name)
		case mode&fs.ModeSymlink != 0:
			err = x.refuse(zf.Name, "a symlink")
		case mode.IsRegular():
			err = x.unzipFile(name, zf)
		default:
			err = x.refuse(zf.Name, fmt.Sprintf("a special file (mode %s)", mode.Type()))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (x *extractor) unzipFile(name string, zf *zip.File) error {
	rc, err := zf.Open()
	if err != nil {
		return fenixerr.Validation("skill archive %q entry %q cannot be read: %v", x.source, zf.Name, err).WithCause(err)
	}
	defer rc.Close()
	return x.writeFile(name, rc, zf.Mode())
}

func (x *extractor) copyDir(src *os.Root) error {
	dir := x.source
	// The source is the agent's workspace: a directory it swaps for a
	// FIFO during the walk must fail the install, not block it.
	return fs.WalkDir(workspace.ListingFS(src), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fenixerr.Validation("skill source directory %q: reading %q: %v", dir, p, err).WithCause(err)
		}
		if p == "." {
			return nil
		}
		if x.denied != nil && x.denied(p) {
			return fenixerr.New(fenixerr.TypePermissionDenied, "skill source %q entry %q is denied to reads by a permission rule, so it is not installed where skill files are read: remove it from the skill", dir, p).WithCode("read_denied")
		}
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			return x.refuse(p, "a symlink")
		case d.IsDir() && d.Name() == ".git":
			return fs.SkipDir
		case d.IsDir():
			return x.mkdir(p)
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return fenixerr.Validation("skill source directory %q: %v", dir, err).WithCause(err)
			}
			// Non-blocking, and checked again after opening, in case the
			// file was swapped for a FIFO after the walk saw it.
			f, err := src.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				return fenixerr.Validation("skill source directory %q: opening %q: %v", dir, p, err).WithCause(err)
			}
			defer f.Close()
			if opened, err := f.Stat(); err != nil || !opened.Mode().IsRegular() {
				return x.refuse(p, "not a regular file when opened")
			}
			return x.writeFile(p, f, info.Mode())
		default:
			return x.refuse(p, fmt.Sprintf("a special file (mode %s)", t))
		}
	})
}
