package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/fenixrt/fenix/fenixerr"
)

// A profile's directory is in the workspace, where the agent's commands
// can fill it with anything; what a listing reads is bounded whatever it
// holds (BenchmarkList).
const (
	// maxScannedNames bounds the names of a profile directory a listing
	// or a new entry's count reads: a store never writes more than
	// MaxEntries.
	maxScannedNames = 4 * MaxEntries
	// headBytes is what a listing reads of an entry file: the key, title,
	// update time and content size that precede the content.
	headBytes = 4 << 10
	// maxListedBytes bounds what one listing reads in all: a full profile
	// of entries written before their files led with a head, read whole.
	maxListedBytes = MaxEntries * MaxContentBytes
)

// Listing is a profile's entries, most recently updated first.
type Listing struct {
	Entries []Summary
	// Incomplete is set when the directory held more files than a listing
	// reads, or entries too large to read within its bound: some entries
	// may be missing.
	Incomplete bool
}

// entryKeys returns the keys of the entry files in a profile's directory
// (regular files named <valid key>.json), reading at most maxScannedNames
// names; unread reports that the directory holds more.
func (s *Store) entryKeys(profile string) (keys []string, unread bool, err error) {
	entries, more, _, err := s.ws.ReadDirLimit(ProfileDir(profile), maxScannedNames)
	var fe *fenixerr.Error
	if errors.As(err, &fe) && fe.Code == "not_found" {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	for _, de := range entries {
		key, ok := strings.CutSuffix(de.Name(), ".json")
		if ok && de.Type().IsRegular() && ValidateKey(key) == nil {
			keys = append(keys, key)
		}
	}
	return keys, more, nil
}

// List summarizes a profile's entries, most recently updated first. A
// profile with no directory has no entries. Files that are not valid
// entries are skipped.
func (s *Store) List(profile string) (Listing, error) {
	if err := ValidateProfile(profile); err != nil {
		return Listing{}, err
	}
	keys, unread, err := s.entryKeys(profile)
	if err != nil {
		return Listing{}, err
	}
	out := Listing{Entries: []Summary{}, Incomplete: unread}
	budget := maxListedBytes
	for _, key := range keys {
		sum, ok, whole := s.summarize(profile, key, budget)
		budget -= headBytes + whole
		if whole < 0 {
			out.Incomplete = true
		}
		if ok {
			out.Entries = append(out.Entries, sum)
		}
	}
	sort.Slice(out.Entries, func(i, j int) bool {
		a, b := out.Entries[i], out.Entries[j]
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.After(b.UpdatedAt)
		}
		return a.Key < b.Key
	})
	return out, nil
}

// summarize reads an entry's head, and the whole file only when the head
// does not say what a summary needs (a file written by hand or before
// entries led with it) and budget allows. whole is what that read cost,
// or -1 when the budget refused it.
func (s *Store) summarize(profile, key string, budget int) (sum Summary, ok bool, whole int) {
	r, err := s.ws.ReadFile(entryPath(profile, key), headBytes)
	if err != nil {
		return Summary{}, false, 0
	}
	if r.Truncated {
		if sum, ok := summaryFromHead(key, r.Content); ok {
			return sum, true, 0
		}
		if budget < maxFileBytes {
			return Summary{}, false, -1
		}
		if r, err = s.ws.ReadFile(entryPath(profile, key), maxFileBytes); err != nil {
			return Summary{}, false, 0
		}
		whole = len(r.Content)
	}
	e, err := decode(key, r.Content, r.Truncated)
	if err != nil {
		return Summary{}, false, whole
	}
	return Summary{Key: key, Title: e.Title, UpdatedAt: e.UpdatedAt, Bytes: len(e.Content)}, true, whole
}

// summaryFromHead decodes the fields before "content" in the head of an
// entry file; ok only when the title, update time and content size all
// come before it.
func summaryFromHead(key string, head []byte) (Summary, bool) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Summary{}, false
	}
	sum := Summary{Key: key}
	var title *string
	var updated *time.Time
	var size *int
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return Summary{}, false
		}
		switch t {
		case "content":
			if title == nil || updated == nil || size == nil {
				return Summary{}, false
			}
			sum.Title, sum.UpdatedAt, sum.Bytes = *title, *updated, *size
			return sum, true
		case "title":
			err = dec.Decode(&title)
		case "updated_at":
			err = dec.Decode(&updated)
		case "content_bytes":
			err = dec.Decode(&size)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return Summary{}, false
		}
	}
	return Summary{}, false
}
