package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK gives a tool handler neither its JSON-RPC request ID nor the
// reason its context ended. The gateway reads both off the wire before the
// SDK does: a tools/call gets its request ID in params._meta (overwriting
// whatever a client put there), and notifications/cancelled is noted in a
// ledger, so a handler whose context ends can tell a client's cancellation
// (cancel the run) from a disconnect or a gateway shutdown (let the run
// finish in Temporal; a retry picks up its result).
const metaRequestID = "fenixrt/request_id"

const (
	methodCallTool  = "tools/call"
	methodCancelled = "notifications/cancelled"
)

// cancelLedger remembers requests a client cancelled, per session.
type cancelLedger struct {
	mu        sync.Mutex
	cancelled map[string]string // session + "\x00" + request ID -> reason
}

func newCancelLedger() *cancelLedger { return &cancelLedger{cancelled: map[string]string{}} }

func (l *cancelLedger) note(session, requestID, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.cancelled) > 10000 { // bounded: entries are taken by their handlers
		clear(l.cancelled)
	}
	l.cancelled[session+"\x00"+requestID] = reason
}

// take reports whether the request was cancelled by its client, and why.
func (l *cancelLedger) take(session, requestID string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := session + "\x00" + requestID
	reason, ok := l.cancelled[k]
	delete(l.cancelled, k)
	return reason, ok
}

// idText renders a JSON-RPC ID for workflow IDs, call IDs, messages and
// the ledger. A string ID is any string the client likes: one that is not
// 1 to 64 of [A-Za-z0-9._-] (a newline, a control or invisible character,
// a path, a 10 KB blob) is replaced by "h" and 16 hex digits of its
// SHA-256, so it never reaches a workflow ID or a log line as it is, and a
// retry of the same request still maps to the same run. Plain string IDs
// keep their "s" prefix, so neither form can be mistaken for the other or
// for a number.
func idText(id any) string {
	var text string
	switch v := id.(type) {
	case string:
		if plainID(v) {
			return "s" + v
		}
		text = "string:" + v
	case float64:
		return fmt.Sprintf("%d", int64(v))
	case int64:
		return fmt.Sprintf("%d", v)
	case json.Number:
		text = "number:" + v.String()
	default:
		text = fmt.Sprintf("%T:%v", id, id)
	}
	sum := sha256.Sum256([]byte(text))
	return "h" + hex.EncodeToString(sum[:8])
}

// plainID reports whether s is 1 to 64 of [A-Za-z0-9._-].
func plainID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// visibleASCII reports whether s is made of 0x21-0x7E only, as the spec
// asks of an Mcp-Session-Id.
func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// inspect annotates a tools/call or notes a cancellation. It returns the
// message to pass on and, for a tools/call, its request ID as the call
// records it.
func (l *cancelLedger) inspect(session string, msg jsonrpc.Message) (jsonrpc.Message, string) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return msg, ""
	}
	switch req.Method {
	case methodCallTool, methodListResources, methodListResourceTemplates, methodReadResource,
		methodListPrompts, methodGetPrompt, methodComplete, methodSubscribe:
		// Each runs as a tool call (resources.go, prompts.go,
		// completion.go, subscriptions.go): its run is found, and
		// cancelled, by its request ID, and a retry of it joins that run.
		if !req.ID.IsValid() {
			return msg, ""
		}
		var params map[string]any
		if len(req.Params) > 0 && json.Unmarshal(req.Params, &params) != nil {
			return msg, "" // the SDK reports the malformed params
		}
		if params == nil {
			params = map[string]any{}
		}
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		id := idText(req.ID.Raw())
		meta[metaRequestID] = id
		params["_meta"] = meta
		if raw, err := json.Marshal(params); err == nil {
			req.Params = raw
		}
		return msg, id
	case methodCancelled:
		var p mcp.CancelledParams
		if json.Unmarshal(req.Params, &p) == nil && p.RequestID != nil {
			l.note(session, idText(p.RequestID), p.Reason)
		}
	}
	return msg, ""
}

// requestIDOf reads the request ID inspect put in params._meta.
func requestIDOf(meta mcp.Meta) string {
	s, _ := meta[metaRequestID].(string)
	return s
}

// transport wraps a stream transport (stdio) so every message read passes
// through the ledger.
type transport struct {
	mcp.Transport
	ledger *cancelLedger
}

func (t transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return conn{Connection: c, ledger: t.ledger}, nil
}

type conn struct {
	mcp.Connection
	ledger *cancelLedger
}

func (c conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	msg, _ = c.ledger.inspect(c.Connection.SessionID(), msg)
	return msg, nil
}

// rewriteBody passes an HTTP POST body of session through the ledger:
// one JSON-RPC message, or a batch of them (older protocol versions). It
// returns the request IDs of the body's tools/calls.
func (l *cancelLedger) rewriteBody(r *http.Request, session string) ([]string, error) {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessageBytes+1))
	_ = r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	if len(body) > MaxMessageBytes {
		return nil, fmt.Errorf("request body is over the 4 MiB (%d-byte) limit of one message read by the Fenix MCP gateway", MaxMessageBytes)
	}
	out := body
	var calls []string
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) == nil {
			for i, raw := range batch {
				batch[i] = l.rewriteOne(session, raw, &calls)
			}
			if b, err := json.Marshal(batch); err == nil {
				out = b
			}
		}
	case len(trimmed) > 0:
		out = l.rewriteOne(session, trimmed, &calls)
	}
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.ContentLength = int64(len(out))
	return calls, nil
}

func (l *cancelLedger) rewriteOne(session string, raw json.RawMessage, calls *[]string) json.RawMessage {
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		return raw // the SDK answers with the parse error
	}
	msg, id := l.inspect(session, msg)
	if id != "" {
		*calls = append(*calls, id)
	}
	out, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return raw
	}
	return out
}
