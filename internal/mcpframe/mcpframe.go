// Package mcpframe bounds and checks the messages of an MCP stdio stream
// (newline-delimited JSON-RPC) without ending the session.
//
// The go-sdk's stdio connection decodes the stream with one json.Decoder
// and stops reading at its first error, so a single message over its line
// limit, a line that is not JSON (a server's stray log line on stdout) or
// JSON that is not a JSON-RPC message ends the session and every call in
// flight on it. A Reader sits between the stream and the SDK: it passes
// each line of up to its limit that decodes as a JSON-RPC message (or a
// batch of them) through unchanged and replaces any other line, which it
// reads to its end and drops, with a short marker notification. Conn, around the SDK's
// connection, turns a marker into what the peer is owed: an error response
// to a request, the failure of our own request whose response was dropped,
// or a logged error for a notification. Only the top-level "id", "method",
// "result" and "error" of a dropped line are kept, in bounded buffers.
package mcpframe

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDKLineLimit is the MaxLineLength to give the SDK's IOTransport over a
// Reader of this limit. Every line the Reader passes is within limit, so
// the SDK's own cap only stops a message spread over many lines (which the
// stdio transport forbids: messages "MUST NOT contain embedded newlines");
// such a message still ends the session, as before.
func SDKLineLimit(limit int) int { return 2*limit + 1024 }

// Dropped describes a message the Reader dropped: over its limit, or,
// when Invalid is set, not a JSON-RPC message.
type Dropped struct {
	// Bytes is the message's size without its line ending; Limit the
	// Reader's limit.
	Bytes int64
	Limit int
	// Invalid says why a line within the limit is not a JSON-RPC message;
	// NotJSON is set when it is not JSON at all.
	Invalid string
	NotJSON bool
	// ID is the request's or response's ID when it could be read.
	ID jsonrpc.ID
	// Method is the request's or notification's method when it could be
	// read.
	Method string
	// Response is set when the message was a response (it had "result" or
	// "error" and no "method").
	Response bool
	// UnreadableID is set when the message had an "id" that is not a
	// JSON-RPC ID (an object, an array, a number out of range, a boolean)
	// or too long to keep.
	UnreadableID bool
}

// Message says what was dropped and names the limit; where says who read
// it ("by the Fenix MCP gateway").
func (o Dropped) Message(where string) string {
	kind := "message"
	switch {
	case o.Method != "" && o.ID.IsValid():
		kind = "request " + o.Method
	case o.Method != "":
		kind = "notification " + o.Method
	case o.Response:
		kind = "response"
	}
	switch {
	case o.ID.IsValid():
		kind += fmt.Sprintf(" (id %v)", o.ID.Raw())
	case o.UnreadableID:
		kind += " (its id is not a string or an integer)"
	}
	if o.NotJSON {
		return fmt.Sprintf("line of %d bytes read %s is not JSON (%s); it was dropped", o.Bytes, where, o.Invalid)
	}
	if o.Invalid != "" {
		return fmt.Sprintf("JSON-RPC %s of %d bytes read %s is not a valid message (%s); it was dropped", kind, o.Bytes, where, o.Invalid)
	}
	return fmt.Sprintf("JSON-RPC %s of %d bytes is over the %s (%d-byte) limit of one message read %s; it was dropped",
		kind, o.Bytes, human(o.Limit), o.Limit, where)
}

// Code is the JSON-RPC error code a dropped request is answered with.
func (o Dropped) Code() int64 {
	if o.NotJSON {
		return jsonrpc.CodeParseError
	}
	return jsonrpc.CodeInvalidRequest
}

// invalidMessage says why a line within the limit would stop the SDK's
// reader, or "" when it would not: blank lines and JSON-RPC messages and
// batches pass. notJSON is set when the line is not JSON at all.
func invalidMessage(line []byte) (reason string, notJSON bool) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return "", false
	}
	if !json.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		return err.Error(), true
	}
	if trimmed[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(trimmed, &batch); err != nil || len(batch) == 0 {
			return "not a batch of messages", false
		}
		for _, raw := range batch {
			if _, err := jsonrpc.DecodeMessage(raw); err != nil {
				return err.Error(), false
			}
		}
		return "", false
	}
	if _, err := jsonrpc.DecodeMessage(trimmed); err != nil {
		return err.Error(), false
	}
	return "", false
}

func human(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d-byte", n)
}

// Reader passes the lines of r of up to limit bytes (line ending not
// counted) and replaces each longer one with a marker. Its Read never
// returns more than the rest of one line, so a json.Decoder reading it
// never buffers past the message it decodes.
type Reader struct {
	r      *bufio.Reader
	src    io.Reader
	limit  int
	method string // the marker's method: random, so no peer can forge one
	onEOF  func()

	line    []byte // reused line buffer
	pending []byte // what Read returns next
	err     error
	eofOnce sync.Once

	mu      sync.Mutex
	dropped map[int64]Dropped
	seq     int64
}

// NewReader bounds the lines of r to limit bytes. onEOF, when set, runs
// once when r ends with io.EOF (the peer closed the stream), before the
// reader of this Reader sees the end.
func NewReader(r io.Reader, limit int, onEOF func()) *Reader {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	return &Reader{
		r: bufio.NewReaderSize(r, 64<<10), src: r, limit: limit, onEOF: onEOF,
		method:  "fenixrt/oversized-message/" + hex.EncodeToString(nonce[:]),
		dropped: map[int64]Dropped{},
	}
}

// Close closes the underlying reader when it is an io.Closer.
func (r *Reader) Close() error {
	if c, ok := r.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (r *Reader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			if errors.Is(r.err, io.EOF) && r.onEOF != nil {
				r.eofOnce.Do(r.onEOF)
			}
			return 0, r.err
		}
		r.next()
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// next reads one line into pending, or the marker of a dropped one.
func (r *Reader) next() {
	line := r.line[:0]
	defer func() { r.line = line[:0] }()
	for {
		chunk, err := r.r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			// No line ending yet; at most a '\r' of one is in the chunk.
			if len(line)+len(chunk)-1 > r.limit {
				r.drop(line, chunk)
				return
			}
			line = append(line, chunk...)
			continue
		case err != nil:
			// The last line, without a line ending.
			line = append(line, chunk...)
			r.err = err
			if len(line) > r.limit {
				r.mark(scanAll(line), int64(len(line)), "", false)
				return
			}
			r.pass(line, len(line))
			return
		}
		line = append(line, chunk...)
		if n := contentLen(line); n > r.limit {
			r.mark(scanAll(line), int64(n), "", false)
			return
		}
		r.pass(line, contentLen(line))
		return
	}
}

// pass makes a line within the limit the next one Read returns, or the
// marker of a line that is not a JSON-RPC message.
func (r *Reader) pass(line []byte, size int) {
	if reason, notJSON := invalidMessage(line); reason != "" {
		r.mark(scanAll(line), int64(size), reason, notJSON)
		return
	}
	r.pending = line
}

// contentLen is the size of a line without its line ending.
func contentLen(line []byte) int {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
		if n > 0 && line[n-1] == '\r' {
			n--
		}
	}
	return n
}

// drop reads the rest of an oversized line, keeping only what identifies
// it, and queues its marker.
func (r *Reader) drop(line, chunk []byte) {
	var s scanner
	s.feed(line)
	s.feed(chunk)
	size := int64(len(line) + len(chunk))
	prev := chunk[len(chunk)-1]
	var err error = bufio.ErrBufferFull
	for errors.Is(err, bufio.ErrBufferFull) {
		chunk, err = r.r.ReadSlice('\n')
		s.feed(chunk)
		size += int64(len(chunk))
		switch {
		case err == nil:
			size -= int64(len(chunk) - contentLen(chunk))
			if len(chunk) == 1 && prev == '\r' {
				size--
			}
		case len(chunk) > 0:
			prev = chunk[len(chunk)-1]
		}
	}
	if err != nil {
		r.err = err
	}
	r.mark(&s, size, "", false)
}

func scanAll(line []byte) *scanner {
	var s scanner
	s.feed(line)
	return &s
}

// mark records a dropped message and makes its marker the next line.
func (r *Reader) mark(s *scanner, size int64, invalid string, notJSON bool) {
	o := s.result()
	o.Bytes, o.Limit, o.Invalid, o.NotJSON = size, r.limit, invalid, notJSON
	r.mu.Lock()
	r.seq++
	seq := r.seq
	r.dropped[seq] = o
	r.mu.Unlock()
	r.pending = fmt.Appendf(nil, `{"jsonrpc":"2.0","method":%q,"params":{"seq":%d}}`+"\n", r.method, seq)
}

// Take reports whether msg is one of the Reader's markers, and what it
// stands for.
func (r *Reader) Take(msg jsonrpc.Message) (Dropped, bool) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != r.method {
		return Dropped{}, false
	}
	var p struct {
		Seq int64 `json:"seq"`
	}
	_ = json.Unmarshal(req.Params, &p)
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.dropped[p.Seq]
	delete(r.dropped, p.Seq)
	return o, ok
}

// Conn turns a Reader's markers into answers: a dropped request is
// answered with an error (JSON-RPC -32600, invalid request, or -32700,
// parse error, for a line that is not JSON) naming the limit or the fault, a dropped response fails our pending request with that error,
// and a dropped notification (or a message whose ID could not be read) is
// logged. Other messages pass unchanged.
type Conn struct {
	mcp.Connection
	r      *Reader
	where  string
	logger *slog.Logger
	// nullIDs, when set, answers what has no ID to answer (see
	// AnswerUnidentified).
	nullIDs io.Writer
}

// NewConn wraps c, which reads from r; where names the reader in messages
// ("by the Fenix MCP gateway").
func NewConn(c mcp.Connection, r *Reader, where string, logger *slog.Logger) *Conn {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Conn{Connection: c, r: r, where: where, logger: logger}
}

func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		o, ok := c.r.Take(msg)
		if !ok {
			return msg, nil
		}
		text := o.Message(c.where)
		wire := &jsonrpc.Error{Code: o.Code(), Message: text}
		switch {
		case o.Response && o.ID.IsValid():
			c.logger.Error(text)
			return &jsonrpc.Response{ID: o.ID, Error: wire}, nil
		case o.Method != "" && o.ID.IsValid():
			c.logger.Warn(text)
			if err := c.Connection.Write(ctx, &jsonrpc.Response{ID: o.ID, Error: wire}); err != nil {
				return nil, fmt.Errorf("answer a dropped oversized request: %w", err)
			}
		case c.nullIDs != nil && o.unidentified():
			c.logger.Warn(text)
			if err := c.answerNullID(wire); err != nil {
				return nil, fmt.Errorf("answer a dropped request without a readable ID: %w", err)
			}
		default:
			c.logger.Error(text + "; it had no ID to answer")
		}
	}
}

// unidentified reports whether a dropped line is owed an answer it has no
// ID for: a line that is not JSON, a request whose ID cannot be read, or
// an object that is neither a request, a notification nor a response.
// A notification is never answered.
func (o Dropped) unidentified() bool {
	switch {
	case o.NotJSON:
		return true
	case o.Method != "":
		return o.UnreadableID
	}
	return !o.Response && !o.ID.IsValid()
}

// AnswerUnidentified makes c answer what has no ID to answer (a line
// that is not JSON, a request whose ID cannot be read, an object that is
// no JSON-RPC message) with an error whose "id" is null, as JSON-RPC 2.0
// asks of a server ("If there was an error in detecting the id in the
// Request object, it MUST be Null"): the SDK leaves a null ID out of a
// response, so c writes it through w, which must be the writer under the
// connection, shared through a SerialWriter.
// Only a server's side should: a client would answer a server's stray
// log line on stdout with a response it never asked for.
func (c *Conn) AnswerUnidentified(w *SerialWriter) *Conn {
	c.nullIDs = w
	return c
}

func (c *Conn) answerNullID(wire *jsonrpc.Error) error {
	data, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      *struct{}      `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{JSONRPC: "2.0", Error: wire})
	if err != nil {
		return err
	}
	_, err = c.nullIDs.Write(append(data, '\n'))
	return err
}

// SerialWriter writes whole messages one at a time: the SDK's stream
// connection writes each message with one Write, so a message written
// beside it through the same SerialWriter never splits one of the SDK's.
type SerialWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

// NewSerialWriter serializes the writes to w.
func NewSerialWriter(w io.WriteCloser) *SerialWriter { return &SerialWriter{w: w} }

func (s *SerialWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *SerialWriter) Close() error { return s.w.Close() }
