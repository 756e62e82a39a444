// Package contextstore keeps large message lists out of workflow history.
// Stages exchange a contract.MessageSet: the messages inline when they are
// small, or a content-addressed reference into a Store when they are not.
package contextstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// DefaultInlineLimit is the largest message list kept inline in history.
const DefaultInlineLimit = 64 << 10

const refPrefix = "ctx-sha256-"

// Store persists message lists by content hash. Put is idempotent, so an
// activity retry that stores the same list again is harmless.
type Store interface {
	Put(ctx context.Context, data []byte) (string, error)
	Get(ctx context.Context, ref string) ([]byte, error)
}

// RefFor is the content address of data.
func RefFor(data []byte) string {
	sum := sha256.Sum256(data)
	return refPrefix + hex.EncodeToString(sum[:])
}

func validRef(ref string) bool {
	if !strings.HasPrefix(ref, refPrefix) || len(ref) != len(refPrefix)+64 {
		return false
	}
	_, err := hex.DecodeString(ref[len(refPrefix):])
	return err == nil
}

// FS is a Store in a local (or shared, mounted) directory. For several
// worker hosts the directory must be shared, or use a database store.
type FS struct{ dir string }

// NewFS creates the directory if needed.
func NewFS(dir string) (*FS, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("context store directory %q: %w", dir, err)
	}
	return &FS{dir: dir}, nil
}

func (s *FS) path(ref string) string {
	h := ref[len(refPrefix):]
	return filepath.Join(s.dir, h[:2], h+".json")
}

// Put writes data atomically under its hash.
func (s *FS) Put(_ context.Context, data []byte) (string, error) {
	ref := RefFor(data)
	p := s.path(ref)
	if _, err := os.Stat(p); err == nil {
		return ref, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return "", fenixerr.Transient(fmt.Errorf("context store: %w", err))
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return "", fenixerr.Transient(fmt.Errorf("context store: %w", err))
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fenixerr.Transient(fmt.Errorf("context store write: %w", err))
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", fenixerr.Transient(fmt.Errorf("context store write: %w", err))
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return "", fenixerr.Transient(fmt.Errorf("context store rename: %w", err))
	}
	return ref, nil
}

// Get reads the data of ref and verifies its hash.
func (s *FS) Get(_ context.Context, ref string) ([]byte, error) {
	if !validRef(ref) {
		return nil, fenixerr.Validation("context reference %q is malformed: expected %s<64 hex digits>", ref, refPrefix)
	}
	data, err := os.ReadFile(s.path(ref))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fenixerr.Validation("context reference %q is not in this worker's context store (%s); with several hosts, share the store", ref, s.dir).WithCode("context_not_found")
	}
	if err != nil {
		return nil, fenixerr.Transient(fmt.Errorf("context store read %s: %w", ref, err))
	}
	if RefFor(data) != ref {
		return nil, fenixerr.Runtime("context %q is corrupt: its content does not match its hash", ref)
	}
	return data, nil
}

// Put stores messages unconditionally and returns their reference set.
func Put(ctx context.Context, s Store, messages []contract.Message) (contract.MessageSet, error) {
	if s == nil {
		return contract.MessageSet{}, fenixerr.Runtime("no context store is configured")
	}
	data, err := json.Marshal(messages)
	if err != nil {
		return contract.MessageSet{}, fenixerr.Runtime("encoding %d messages: %v", len(messages), err)
	}
	ref, err := s.Put(ctx, data)
	if err != nil {
		return contract.MessageSet{}, err
	}
	return contract.MessageSet{Ref: ref, Count: len(messages), Bytes: len(data)}, nil
}

// Pack returns messages as a MessageSet, storing them when their encoding
// is larger than inlineLimit.
func Pack(ctx context.Context, s Store, messages []contract.Message, inlineLimit int) (contract.MessageSet, error) {
	data, err := encodeMessages(messages)
	if err != nil {
		return contract.MessageSet{}, err
	}
	set := contract.MessageSet{Count: len(messages), Bytes: len(data)}
	if inlineLimit <= 0 {
		inlineLimit = DefaultInlineLimit
	}
	if len(data) <= inlineLimit {
		set.Messages = messages
		return set, nil
	}
	if s == nil {
		return contract.MessageSet{}, fenixerr.PayloadTooLarge("message list of %d bytes exceeds the inline limit of %d bytes and no context store is configured", len(data), inlineLimit)
	}
	ref, err := s.Put(ctx, data)
	if err != nil {
		return contract.MessageSet{}, err
	}
	set.Ref = ref
	return set, nil
}

// AppendInline is Pack of set's messages followed by more, for a set
// that is inline and stays within inlineLimit (DefaultInlineLimit when 0):
// it returns the longer set, measured as Pack measures it, and true,
// without a store. It returns false when set is a reference or the longer
// list must be stored; the caller then unpacks and packs. Callers that
// must be deterministic (workflow code) can use it: it only encodes.
func AppendInline(set contract.MessageSet, more []contract.Message, inlineLimit int) (contract.MessageSet, bool, error) {
	if set.Ref != "" {
		return contract.MessageSet{}, false, nil
	}
	if inlineLimit <= 0 {
		inlineLimit = DefaultInlineLimit
	}
	messages := append(slices.Clip(set.Messages), more...)
	longer, err := Measure(messages)
	if err != nil || longer.Bytes > inlineLimit {
		return contract.MessageSet{}, false, err
	}
	longer.Messages = messages
	return longer, true, nil
}

// Measure is Pack's count and size of messages without the messages: for
// a caller that records how big a context was but never reads it back.
func Measure(messages []contract.Message) (contract.MessageSet, error) {
	data, err := encodeMessages(messages)
	if err != nil {
		return contract.MessageSet{}, err
	}
	return contract.MessageSet{Count: len(messages), Bytes: len(data)}, nil
}

func encodeMessages(messages []contract.Message) ([]byte, error) {
	data, err := json.Marshal(messages)
	if err != nil {
		return nil, fenixerr.Runtime("encoding %d messages: %v", len(messages), err)
	}
	return data, nil
}

// Unpack resolves a MessageSet back into messages.
func Unpack(ctx context.Context, s Store, set contract.MessageSet) ([]contract.Message, error) {
	if set.Ref == "" {
		return set.Messages, nil
	}
	if s == nil {
		return nil, fenixerr.Validation("message set refers to %q but no context store is configured", set.Ref)
	}
	data, err := s.Get(ctx, set.Ref)
	if err != nil {
		return nil, err
	}
	var messages []contract.Message
	if err := json.Unmarshal(data, &messages); err != nil {
		return nil, fenixerr.Runtime("context %q does not decode as messages: %v", set.Ref, err)
	}
	return messages, nil
}
