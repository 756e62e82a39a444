// Package memory keeps an agent profile's memory entries inside the
// workspace, one JSON file per entry at .fenix/memory/<profile>/<key>.json,
// so they travel with the workspace and every access is confined by it.
package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/workspace"
)

// Dir is the workspace-relative directory holding every profile's entries.
const Dir = ".fenix/memory"

// Size caps.
const (
	MaxKeyBytes     = 64
	MaxTitleBytes   = 200
	MaxContentBytes = 64 << 10
	// MaxEntries caps the entries of one profile.
	MaxEntries = 500
	// maxFileBytes leaves room for the JSON envelope around the content.
	maxFileBytes = MaxContentBytes*2 + 4096
)

var (
	keyPattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
	profilePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// Entry is one memory entry as stored.
type Entry struct {
	Key       string    `json:"key"`
	Title     string    `json:"title"`
	Content   string    `json:"content"`
	UpdatedAt time.Time `json:"updated_at"`
}

// stored is an entry as its file holds it: what a listing needs comes
// before the content, so a listing reads a file's head, not all of it.
type stored struct {
	Key          string    `json:"key"`
	Title        string    `json:"title"`
	UpdatedAt    time.Time `json:"updated_at"`
	ContentBytes int       `json:"content_bytes"`
	Content      string    `json:"content"`
}

// Summary is an entry without its content, for listings and the operator
// snapshot.
type Summary struct {
	Key       string    `json:"key"`
	Title     string    `json:"title"`
	UpdatedAt time.Time `json:"updated_at"`
	Bytes     int       `json:"bytes"`
}

// Lister is what the operator snapshot needs from a store.
type Lister interface {
	List(profile string) (Listing, error)
}

// Store reads and writes memory entries in one workspace.
type Store struct {
	ws  *workspace.Workspace
	now func() time.Time
}

var _ Lister = (*Store)(nil)

// NewStore returns a store over ws.
func NewStore(ws *workspace.Workspace) *Store {
	return &Store{ws: ws, now: func() time.Time { return time.Now().UTC() }}
}

// ValidateKey checks the key grammar: lowercase letters, digits, '.', '_'
// and '-', starting with a letter or digit, at most MaxKeyBytes.
func ValidateKey(key string) error {
	if len(key) > MaxKeyBytes || !keyPattern.MatchString(key) {
		return fenixerr.Validation("memory key %q is invalid: use 1-%d lowercase letters, digits, '.', '_' or '-', starting with a letter or digit (for example \"project-notes\")", key, MaxKeyBytes).WithCode("invalid_memory_key")
	}
	return nil
}

// ValidateProfile checks that a profile name is a single safe path segment.
func ValidateProfile(profile string) error {
	if len(profile) > 64 || !profilePattern.MatchString(profile) {
		return fenixerr.Validation("agent profile %q cannot name a memory directory: use 1-64 letters, digits, '.', '_' or '-'", profile).WithCode("invalid_profile")
	}
	return nil
}

// ProfileDir is the workspace-relative directory of a profile's entries.
func ProfileDir(profile string) string { return path.Join(Dir, profile) }

func entryPath(profile, key string) string { return path.Join(Dir, profile, key+".json") }

// Write creates or replaces an entry and reports whether it was created.
// UpdatedAt is set by the store.
func (s *Store) Write(profile string, e Entry) (Entry, bool, error) {
	if err := ValidateProfile(profile); err != nil {
		return Entry{}, false, err
	}
	if err := ValidateKey(e.Key); err != nil {
		return Entry{}, false, err
	}
	if len(e.Title) > MaxTitleBytes || strings.ContainsAny(e.Title, "\r\n") {
		return Entry{}, false, fenixerr.Validation("memory title for %q must be one line of at most %d bytes", e.Key, MaxTitleBytes)
	}
	if len(e.Content) > MaxContentBytes {
		return Entry{}, false, fenixerr.PayloadTooLarge("memory content for %q is %d bytes, over the limit of %d bytes", e.Key, len(e.Content), MaxContentBytes)
	}
	if !utf8.ValidString(e.Content) || !utf8.ValidString(e.Title) {
		return Entry{}, false, fenixerr.Validation("memory entry %q is not valid UTF-8", e.Key)
	}
	rel := entryPath(profile, e.Key)
	_, _, statErr := s.ws.Stat(rel)
	created := statErr != nil
	if created {
		keys, unread, err := s.entryKeys(profile)
		if err != nil {
			return Entry{}, false, err
		}
		if unread {
			return Entry{}, false, fenixerr.Validation("the memory directory of profile %s holds more than %d files, so its entries cannot be counted: remove the files in %s that are not entries", profile, maxScannedNames, ProfileDir(profile)).WithCode("memory_full")
		}
		if len(keys) >= MaxEntries {
			return Entry{}, false, fenixerr.Validation("profile %s already has %d memory entries (the limit): overwrite an existing key instead", profile, len(keys)).WithCode("memory_full")
		}
	}
	e.UpdatedAt = s.now()
	raw, err := json.MarshalIndent(stored{Key: e.Key, Title: e.Title, UpdatedAt: e.UpdatedAt, ContentBytes: len(e.Content), Content: e.Content}, "", "  ")
	if err != nil {
		return Entry{}, false, fenixerr.Runtime("encoding memory entry %q: %v", e.Key, err)
	}
	if _, err := s.ws.WriteFile(rel, raw, maxFileBytes); err != nil {
		return Entry{}, false, err
	}
	return e, created, nil
}

// Read returns one entry.
func (s *Store) Read(profile, key string) (Entry, error) {
	if err := ValidateProfile(profile); err != nil {
		return Entry{}, err
	}
	if err := ValidateKey(key); err != nil {
		return Entry{}, err
	}
	r, err := s.ws.ReadFile(entryPath(profile, key), maxFileBytes)
	var fe *fenixerr.Error
	if errors.As(err, &fe) && fe.Code == "not_found" {
		return Entry{}, fenixerr.Validation("memory entry %q does not exist for profile %s: memory_list shows the saved keys", key, profile).WithCode("not_found")
	}
	if err != nil {
		return Entry{}, err
	}
	return decode(key, r.Content, r.Truncated)
}

func decode(key string, raw []byte, truncated bool) (Entry, error) {
	if truncated {
		return Entry{}, fenixerr.Validation("memory entry %q is larger than %d bytes and is not read", key, maxFileBytes)
	}
	var e Entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return Entry{}, fenixerr.Validation("memory entry %q is not valid JSON: %v", key, err).WithCode("corrupt_memory_entry")
	}
	e.Key = key
	return e, nil
}

// ListAt lists a profile's entries in the workspace rooted at dir, for
// callers (the operator snapshot) that hold a path rather than a Workspace.
func ListAt(dir, profile string) (Listing, error) {
	ws, err := workspace.Open(dir)
	if err != nil {
		return Listing{}, err
	}
	defer ws.Close()
	return NewStore(ws).List(profile)
}

// String names the store, for messages.
func (s *Store) String() string { return fmt.Sprintf("memory store in %s", s.ws.Dir()) }
