package claudecode

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
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
	// files remembers what each file was written from: an unchanged
	// transcript is not rewritten, and one that grew by new messages gets
	// only their lines rendered and redacted.
	files map[string]*transcriptFile
}

// transcriptFile is what the writer last put in a session's file.
type transcriptFile struct {
	// session holds the session fields every line depends on.
	session string
	// messages are the digests of the messages written, one per line.
	messages [][sha256.Size]byte
	// size is the file's length as written: a file of another length was
	// changed behind the writer's back and is written whole again.
	size int64
	// ref is the context-store reference, with the session fields, the
	// file was written from ("" when none; see WriteSet).
	ref string
}

// extends reports how many of next's lines the file already holds: all
// of the file's, when its messages begin next's for the same session, or
// none.
func (f *transcriptFile) extends(next *transcriptFile) int {
	if f == nil || f.session != next.session || len(next.messages) < len(f.messages) {
		return 0
	}
	for i, d := range f.messages {
		if next.messages[i] != d {
			return 0
		}
	}
	return len(f.messages)
}

// NewTranscriptWriter creates dir if needed.
func NewTranscriptWriter(dir string) (*TranscriptWriter, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("transcript directory %q: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("transcript directory %q: %w", dir, err)
	}
	return &TranscriptWriter{Dir: dir, files: map[string]*transcriptFile{}}, nil
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

// conversationPath is where the latest transcript of a conversation's
// main agent is linked from (Latest).
func (w *TranscriptWriter) conversationPath(conversation string) string {
	return w.PathFor("conversation\x00" + conversation)
}

// pointConversation links the conversation's path at p, the transcript
// just written for s, when s is a run of a conversation's main agent.
func (w *TranscriptWriter) pointConversation(s hooks.Session, p string) error {
	if s.ConversationSessionID == "" || s.ConversationSessionID == s.SessionID || s.IsSubagent {
		return nil
	}
	link := w.conversationPath(s.ConversationSessionID)
	if target, err := os.Readlink(link); err == nil && target == filepath.Base(p) {
		return nil
	}
	tmp := link + ".tmp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := os.Symlink(filepath.Base(p), tmp); err != nil {
		return fmt.Errorf("transcript of conversation %q: %w", s.ConversationSessionID, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("transcript of conversation %q: %w", s.ConversationSessionID, err)
	}
	return nil
}

// Latest is the transcript last written for a run of the conversation's
// main agent on this worker's host, for the events of the conversation
// itself (its SessionEnd after the idle timeout), which carry none.
func (w *TranscriptWriter) Latest(conversation string) (string, bool) {
	link := w.conversationPath(conversation)
	if info, err := os.Stat(link); err != nil || !info.Mode().IsRegular() {
		return "", false
	}
	return link, true
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
		same := w.files[p] != nil && w.files[p].ref == key
		w.mu.Unlock()
		if same {
			if _, err := os.Stat(p); err == nil {
				return p, w.pointConversation(s, p)
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
// from a context-store reference) as what the file was written from. The
// file is replaced atomically, so a hook never reads half of it; when the
// messages only grew, the new file is the old one copied plus the new
// messages' lines, and only those are rendered and redacted (about 7–9
// MB/s, the cost of a long transcript).
func (w *TranscriptWriter) write(s hooks.Session, msgs []contract.Message, refKey string) (string, error) {
	p, err := w.writeFile(s, msgs, refKey)
	if err != nil {
		return p, err
	}
	return p, w.pointConversation(s, p)
}

// writeFile is write's file, without the conversation's link.
func (w *TranscriptWriter) writeFile(s hooks.Session, msgs []contract.Message, refKey string) (string, error) {
	p := w.PathFor(s.SessionID)
	next := &transcriptFile{session: strings.Join([]string{s.SessionID, s.WorkDir(), s.WorkspaceRoot}, "\x00"), ref: refKey}
	for i, m := range msgs {
		raw, err := json.Marshal(m)
		if err != nil {
			return "", fmt.Errorf("transcript %s: message %d: %w", p, i, err)
		}
		next.messages = append(next.messages, sha256.Sum256(raw))
	}
	w.mu.Lock()
	prev := w.files[p]
	w.mu.Unlock()
	kept := prev.extends(next)
	if prev != nil && kept == len(msgs) && kept == len(prev.messages) && fileSize(p) == prev.size {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.files[p] == prev {
			prev.ref = refKey
			return p, nil
		}
		return p, w.replace(p, s, msgs, next, 0, nil)
	}
	data, err := w.lines(s, msgs, kept)
	if err != nil {
		return "", fmt.Errorf("transcript %s: %w", p, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur := w.files[p]; cur != prev {
		// Another write of this session's file came first: the hook
		// stages of a step's parallel calls write the same transcript.
		if cur != nil && cur.extends(next) == len(msgs) && len(cur.messages) == len(msgs) && fileSize(p) == cur.size {
			cur.ref = refKey
			return p, nil
		}
		kept, data = 0, nil
	}
	return p, w.replace(p, s, msgs, next, kept, data)
}

// replace writes the file as next: the first kept lines copied from the
// file as it is (if it still has the length the writer gave it) and then
// data, the lines from kept on; data nil renders them. It holds w.mu.
func (w *TranscriptWriter) replace(p string, s hooks.Session, msgs []contract.Message, next *transcriptFile, kept int, data []byte) error {
	var keep int64
	if kept > 0 {
		keep = w.files[p].size
		if fileSize(p) != keep {
			kept, keep, data = 0, 0, nil
		}
	}
	if data == nil {
		var err error
		if data, err = w.lines(s, msgs, kept); err != nil {
			return fmt.Errorf("transcript %s: %w", p, err)
		}
	}
	tmp, err := os.CreateTemp(w.Dir, ".transcript-*")
	if err != nil {
		return fmt.Errorf("transcript %s: %w", p, err)
	}
	err = copyPrefix(tmp, p, keep)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("transcript %s: %w", p, err)
	}
	next.size = keep + int64(len(data))
	w.files[p] = next
	return nil
}

// lines renders and redacts the lines of msgs from index from on.
func (w *TranscriptWriter) lines(s hooks.Session, msgs []contract.Message, from int) ([]byte, error) {
	data, err := transcriptLines(s, msgs, from)
	if err != nil {
		return nil, err
	}
	return w.redactLines(data)
}

// copyPrefix copies the first n bytes of the file at p to dst.
func copyPrefix(dst *os.File, p string, n int64) error {
	if n == 0 {
		return nil
	}
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.CopyN(dst, src, n)
	return err
}

// fileSize is the length of the file at p, or -1 when it cannot be read.
func fileSize(p string) int64 {
	info, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return info.Size()
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
		delete(w.files, p)
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
	return transcriptLines(s, msgs, 0)
}

// transcriptLines is TranscriptJSONL's lines for msgs[from:]: each line
// depends only on its message, its index and the session, so the lines of
// a transcript that grew are the old lines followed by these.
func transcriptLines(s hooks.Session, msgs []contract.Message, from int) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var parent *string
	if from > 0 {
		id := lineUUID(s.SessionID, from-1)
		parent = &id
	}
	for i := from; i < len(msgs); i++ {
		m := msgs[i]
		// sessionId is the session_id the hooks get: the conversation's
		// (fenix-shape 6), so a script's select(.sessionId == $sid)
		// finds its lines.
		line := transcriptLine{SessionID: cmp.Or(s.ConversationSessionID, s.SessionID), Cwd: s.WorkDir(), ParentUUID: parent,
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
