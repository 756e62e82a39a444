package claudecode

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/redact"
)

// TranscriptWriter writes a session's transcript as a JSONL file in Claude
// Code's transcript format, so hooks that read transcript_path (Stop hooks
// checking what the agent did, PreCompact hooks saving the conversation)
// work unchanged. One file per session under Dir, replaced atomically each
// time it is written, so a hook never reads half a file. Secrets are
// redacted before they reach the file (Redactor), files are 0600 in a
// 0700 directory, and Sweep deletes files past their retention.
type TranscriptWriter struct {
	Dir string
	// Redactor removes secrets from every line; nil writes them as they
	// are.
	Redactor *redact.Redactor

	mu sync.Mutex
	// written remembers each file's content hash to skip rewriting it.
	written map[string]string
	// fromRef remembers, for a file written from a context-store
	// reference, that reference and the session fields the file depends
	// on, so the same set again is not even loaded (see WriteSet).
	fromRef map[string]string
}

// NewTranscriptWriter creates dir if needed.
func NewTranscriptWriter(dir string) (*TranscriptWriter, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("transcript directory %q: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("transcript directory %q: %w", dir, err)
	}
	return &TranscriptWriter{Dir: dir, written: map[string]string{}, fromRef: map[string]string{}}, nil
}

// PathFor is the session's transcript file.
func (w *TranscriptWriter) PathFor(sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	name := safeName(sessionID)
	if len(name) > 80 {
		name = name[:80]
	}
	return filepath.Join(w.Dir, name+"-"+hex.EncodeToString(sum[:4])+".jsonl")
}

// Ensure makes sure the session's file exists (empty when nothing was
// written yet) and returns its path.
func (w *TranscriptWriter) Ensure(sessionID string) (string, error) {
	p := w.PathFor(sessionID)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return "", fmt.Errorf("transcript %s: %w", p, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return "", fmt.Errorf("transcript %s: %w", p, err)
	}
	return p, f.Close()
}

// WriteSet is Write for a message set, with load resolving it into
// messages. A set stored in the context store is named by its content
// hash (Ref), so when the session's file was last written from the same
// Ref, for the same session and directories, and is still there, the file
// is already right: WriteSet returns its path without loading, rendering
// or redacting the set. Every hook event of a step carries the same
// transcript, and loading and redacting a 10 MB one takes about a second.
func (w *TranscriptWriter) WriteSet(s hooks.Session, set contract.MessageSet, load func() ([]contract.Message, error)) (string, error) {
	p := w.PathFor(s.SessionID)
	key := ""
	if set.Ref != "" {
		key = strings.Join([]string{set.Ref, s.SessionID, s.WorkDir(), s.WorkspaceRoot}, "\x00")
		w.mu.Lock()
		same := w.fromRef[p] == key
		w.mu.Unlock()
		if same {
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	msgs, err := load()
	if err != nil {
		return "", err
	}
	return w.write(s, msgs, key)
}

// Write replaces the session's transcript with msgs and returns its path.
func (w *TranscriptWriter) Write(s hooks.Session, msgs []contract.Message) (string, error) {
	return w.write(s, msgs, "")
}

// write is Write, recording refKey (empty when the messages did not come
// from a context-store reference) as what the file was written from.
func (w *TranscriptWriter) write(s hooks.Session, msgs []contract.Message, refKey string) (string, error) {
	p := w.PathFor(s.SessionID)
	data, err := TranscriptJSONL(s, msgs)
	if err != nil {
		return "", err
	}
	if data, err = w.redactLines(data); err != nil {
		return "", fmt.Errorf("transcript %s: %w", p, err)
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written == nil {
		w.written = map[string]string{}
	}
	if w.fromRef == nil {
		w.fromRef = map[string]string{}
	}
	if w.written[p] == hash {
		if _, err := os.Stat(p); err == nil {
			w.fromRef[p] = refKey
			return p, nil
		}
	}
	tmp, err := os.CreateTemp(w.Dir, ".transcript-*")
	if err != nil {
		return "", fmt.Errorf("transcript %s: %w", p, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("transcript %s: %w", p, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("transcript %s: %w", p, err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("transcript %s: %w", p, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("transcript %s: %w", p, err)
	}
	w.written[p] = hash
	w.fromRef[p] = refKey
	return p, nil
}

// redactLines redacts every string of every JSONL line, so a secret
// the conversation carried (an AWS key, an sk-proj- key, a PEM block, a
// DSN's password) never reaches a file hooks — and whoever reads the data
// directory — can read.
func (w *TranscriptWriter) redactLines(data []byte) ([]byte, error) {
	if w.Redactor == nil {
		return data, nil
	}
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		body := bytes.TrimSuffix(line, []byte("\n"))
		if len(body) == 0 {
			continue
		}
		red, _, err := w.Redactor.JSON(body)
		if err != nil {
			return nil, err
		}
		out.Write(red)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// Sweep deletes transcript files not written for maxAge (at worker start
// and periodically): a transcript outlives its session only that long.
// It returns how many it deleted.
func (w *TranscriptWriter) Sweep(maxAge time.Duration, now time.Time) (int, error) {
	entries, err := os.ReadDir(w.Dir)
	if err != nil {
		return 0, fmt.Errorf("transcript directory %q: %w", w.Dir, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	deleted := 0
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !(strings.HasSuffix(name, ".jsonl") || strings.HasPrefix(name, ".transcript-")) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < maxAge {
			continue
		}
		p := filepath.Join(w.Dir, name)
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
			continue
		}
		delete(w.written, p)
		delete(w.fromRef, p)
		deleted++
	}
	return deleted, errors.Join(errs...)
}

// transcriptLine is one line of a Claude Code transcript.
type transcriptLine struct {
	Type       string         `json:"type"`
	UUID       string         `json:"uuid"`
	ParentUUID *string        `json:"parentUuid"`
	SessionID  string         `json:"sessionId"`
	Cwd        string         `json:"cwd,omitempty"`
	Message    transcriptBody `json:"message"`
}

type transcriptBody struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// TranscriptJSONL renders messages as Claude Code transcript lines: user
// and system text, assistant text and tool_use blocks (tools under their
// Claude Code names and argument shapes), and tool results as user lines
// with tool_result blocks.
func TranscriptJSONL(s hooks.Session, msgs []contract.Message) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var parent *string
	for i, m := range msgs {
		line := transcriptLine{SessionID: s.SessionID, Cwd: s.WorkDir(), ParentUUID: parent,
			UUID: lineUUID(s.SessionID, i)}
		switch m.Role {
		case contract.RoleAssistant:
			line.Type = "assistant"
			var blocks []any
			if m.Content != "" {
				blocks = append(blocks, map[string]any{"type": "text", "text": m.Content})
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.CallID,
					"name":  hookToolName(DialectClaude, c.ToolName),
					"input": hookToolInput(DialectClaude, c.ToolName, hooks.CloneArgs(c.Arguments), s.WorkspaceRoot)})
			}
			if blocks == nil {
				blocks = []any{}
			}
			line.Message = transcriptBody{Role: "assistant", Content: blocks}
		case contract.RoleTool:
			line.Type = "user"
			line.Message = transcriptBody{Role: "user", Content: []any{map[string]any{
				"type": "tool_result", "tool_use_id": m.ToolCallID, "content": m.Content}}}
		case contract.RoleSystem:
			line.Type = "system"
			line.Message = transcriptBody{Role: "system", Content: m.Content}
		default:
			line.Type = "user"
			line.Message = transcriptBody{Role: "user", Content: m.Content}
		}
		if err := enc.Encode(line); err != nil {
			return nil, fmt.Errorf("transcript line %d: %w", i, err)
		}
		id := line.UUID
		parent = &id
	}
	return buf.Bytes(), nil
}

// lineUUID is a stable UUID-shaped identifier for a transcript line, so
// rewriting the transcript keeps every line's identity.
func lineUUID(sessionID string, i int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", sessionID, i)))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
