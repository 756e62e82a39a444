package prompt

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/fenixrt/fenix/fenixerr"
)

// MaxProfileFileBytes caps one profile file. A larger file is an error,
// not a silent cut: the end of an instruction file may be what matters.
const MaxProfileFileBytes = 64 << 10

// ProfileFile maps a prompt section to its file in a profile directory.
type ProfileFile struct {
	Section string
	File    string
}

// ProfileFiles are the files a profile directory may hold, in prompt
// order.
var ProfileFiles = []ProfileFile{
	{"agent_prompt", "AGENT.md"},
	{"soul", "SOUL.md"},
	{"user", "USER.md"},
	{"memory", "MEMORY.md"},
	{"operator_prompt", "OPERATOR.md"},
}

var profileNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Profile is the content of <profiles>/<name>/.
type Profile struct {
	Name string `json:"name"`
	// Dir is the profile directory, "" when there is none.
	Dir string `json:"dir,omitempty"`
	// Sections maps section names (agent_prompt, soul, ...) to file
	// contents, for the files that exist and are not blank.
	Sections map[string]string `json:"sections,omitempty"`
}

// LoadProfile reads the profile directory profilesDir/name. An unset
// profilesDir, or a missing profiles or profile directory, gives an empty
// profile: profiles are optional. Files are read through os.Root, so a
// symlink out of the profile directory is refused.
func LoadProfile(profilesDir, name string) (Profile, error) {
	p := Profile{Name: name}
	if !profileNamePattern.MatchString(name) {
		return p, fenixerr.Validation("agent profile %q cannot name a profile directory: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	if profilesDir == "" {
		return p, nil
	}
	parent, err := os.OpenRoot(profilesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, fenixerr.Validation("profiles directory %q cannot be opened: %v", profilesDir, err).WithCause(err)
	}
	defer parent.Close()
	root, err := parent.OpenRoot(name)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, profileError(name, ".", err)
	}
	defer root.Close()
	p.Dir = profilesDir + string(os.PathSeparator) + name
	for _, pf := range ProfileFiles {
		text, err := readProfileFile(root, name, pf.File)
		if err != nil {
			return p, err
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if p.Sections == nil {
			p.Sections = map[string]string{}
		}
		p.Sections[pf.Section] = text
	}
	return p, nil
}

func readProfileFile(root *os.Root, profile, file string) (string, error) {
	f, err := root.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", profileError(profile, file, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", profileError(profile, file, err)
	}
	if !info.Mode().IsRegular() {
		return "", fenixerr.Validation("profile %s file %s is not a regular file", profile, file)
	}
	if info.Size() > MaxProfileFileBytes {
		return "", fenixerr.PayloadTooLarge("profile %s file %s is %d bytes; the limit is %d: move detail into skills or shorten it", profile, file, info.Size(), MaxProfileFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxProfileFileBytes+1))
	if err != nil {
		return "", profileError(profile, file, err)
	}
	if len(data) > MaxProfileFileBytes {
		return "", fenixerr.PayloadTooLarge("profile %s file %s grew past the limit of %d bytes while being read", profile, file, MaxProfileFileBytes)
	}
	if !utf8.Valid(data) {
		return "", fenixerr.Validation("profile %s file %s is not valid UTF-8 text", profile, file)
	}
	return string(data), nil
}

func profileError(profile, file string, err error) error {
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fenixerr.WorkspaceEscape("profile %s file %s resolves outside the profile directory (a symlink?)", profile, file).WithCause(err)
	}
	return fenixerr.Runtime("profile %s file %s cannot be read: %v", profile, file, err).WithCause(err)
}
