package mcpframe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// lines reads everything a Reader passes, one line at a time, and decodes
// the markers.
func lines(t *testing.T, r *Reader) ([]string, []Dropped) {
	t.Helper()
	var out []string
	var dropped []Dropped
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024), 1<<20)
	for sc.Scan() {
		msg, err := jsonrpc.DecodeMessage(sc.Bytes())
		if err == nil {
			if o, ok := r.Take(msg); ok {
				dropped = append(dropped, o)
				out = append(out, "<dropped>")
				continue
			}
		}
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out, dropped
}

func TestReaderPassesLinesWithinTheLimitAndDropsLongerOnes(t *testing.T) {
	const limit = 100
	pad := strings.Repeat("x", 200)
	exactly := `{"jsonrpc":"2.0","id":8,"method":"m","params":"` + strings.Repeat("y", limit-len(`{"jsonrpc":"2.0","id":8,"method":"m","params":""}`)) + `"}`
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"a":"` + pad + `"}}`,
		`{"method":"tools/call","params":{"id":"nested","a":"` + pad + `"},"jsonrpc":"2.0","id":"after"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"a":"` + pad + `"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"text":"` + pad + `"}}`,
		`{"jsonrpc":"2.0","id":"esc\"aped","method":"m","params":"` + pad + `"}` + "\r",
		`[{"jsonrpc":"2.0","id":9,"method":"m","params":"` + pad + `"}]`,
		exactly, // exactly the limit passes
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}, "\n") + "\n" + `{"jsonrpc":"2.0","id":4,"method":"last","params":"` + pad + `"}` // no line ending at EOF
	eof := 0
	r := NewReader(strings.NewReader(in), limit, func() { eof++ })
	got, dropped := lines(t, r)
	want := []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "<dropped>", "<dropped>", "<dropped>", "<dropped>", "<dropped>", "<dropped>",
		exactly, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, "<dropped>"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n got %q\nwant %q", got, want)
	}
	if eof != 1 {
		t.Errorf("onEOF ran %d times, want 1", eof)
	}
	type summary struct {
		id       any
		method   string
		response bool
	}
	wantDropped := []summary{
		{int64(2), "tools/call", false},
		{"after", "tools/call", false},
		{nil, "notifications/progress", false},
		{int64(7), "", true},
		{`esc"aped`, "m", false},
		{nil, "", false}, // a batch: nothing recovered
		{int64(4), "last", false},
	}
	if len(dropped) != len(wantDropped) {
		t.Fatalf("dropped %d, want %d", len(dropped), len(wantDropped))
	}
	for i, o := range dropped {
		if got := (summary{o.ID.Raw(), o.Method, o.Response}); got != wantDropped[i] {
			t.Errorf("dropped[%d] = %+v, want %+v", i, got, wantDropped[i])
		}
		if o.Limit != limit || o.Bytes <= limit {
			t.Errorf("dropped[%d]: %d bytes, limit %d", i, o.Bytes, o.Limit)
		}
	}
	line2 := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"a":"` + pad + `"}}`
	if dropped[0].Bytes != int64(len(line2)) {
		t.Errorf("size = %d, want %d (without the line ending)", dropped[0].Bytes, len(line2))
	}
	msg := dropped[1].Message("by the test")
	for _, part := range []string{"request tools/call", `(id after)`, "100-byte", "by the test"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q does not say %q", msg, part)
		}
	}
}

// Lines much longer than the reader's buffer are dropped without being
// held: what the Reader keeps of them is bounded.
func TestReaderDropsAHugeLineInPieces(t *testing.T) {
	const limit = 1 << 20
	huge := `{"jsonrpc":"2.0","method":"tools/call","params":{"s":"` + strings.Repeat("z", 8<<20) + `"},"id":42}` + "\r\n" + `{"jsonrpc":"2.0","id":43,"method":"ping"}` + "\n"
	r := NewReader(strings.NewReader(huge), limit, nil)
	got, dropped := lines(t, r)
	if len(got) != 2 || got[0] != "<dropped>" || got[1] != `{"jsonrpc":"2.0","id":43,"method":"ping"}` {
		t.Fatalf("lines = %.200q", got)
	}
	if dropped[0].ID.Raw() != int64(42) || dropped[0].Bytes != int64(len(huge)-2-len(`{"jsonrpc":"2.0","id":43,"method":"ping"}`)-1) {
		t.Fatalf("dropped = %+v", dropped[0])
	}
	if cap(r.line) > limit+128<<10 {
		t.Errorf("line buffer grew to %d bytes", cap(r.line))
	}
}

// A peer cannot forge a marker: the method is random per Reader.
func TestMarkersCannotBeForged(t *testing.T) {
	a := NewReader(strings.NewReader(""), 10, nil)
	b := NewReader(strings.NewReader(""), 10, nil)
	if a.method == b.method {
		t.Fatal("two readers share a marker method")
	}
	forged := &jsonrpc.Request{Method: "fenixrt/oversized-message/0000", Params: json.RawMessage(`{"seq":1}`)}
	if _, ok := a.Take(forged); ok {
		t.Fatal("a forged marker was taken")
	}
}

// Read never hands out more than one line, so the SDK's decoder never
// buffers past the message it decodes.
func TestReadStopsAtTheLineEnd(t *testing.T) {
	first := `{"jsonrpc":"2.0","method":"a"}` + "\n"
	r := NewReader(io.MultiReader(strings.NewReader(first+`{"jsonrpc":"2.0","method":"b"}`+"\n")), 100, nil)
	buf := make([]byte, 64)
	n, _ := r.Read(buf)
	if !bytes.Equal(buf[:n], []byte(first)) {
		t.Fatalf("first read = %q", buf[:n])
	}
}

// Lines the SDK's reader would stop at are dropped like oversized ones:
// what is not JSON (a server's log line), JSON that is not a JSON-RPC
// message, a bad batch. Blank lines and valid batches pass.
func TestReaderDropsLinesThatAreNotMessages(t *testing.T) {
	in := strings.Join([]string{
		`INFO server started`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list",`,
		`{"jsonrpc":"1.0","id":6,"method":"ping"}`,
		`{"hello":"world"}`,
		`[]`,
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"x":1}]`,
		``,
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"} {"jsonrpc":"2.0","id":3,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}, "\n") + "\n"
	got, dropped := lines(t, NewReader(strings.NewReader(in), 1000, nil))
	want := []string{"<dropped>", "<dropped>", "<dropped>", "<dropped>", "<dropped>", "<dropped>", "",
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`, "<dropped>", `{"jsonrpc":"2.0","id":4,"method":"ping"}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n got %q\nwant %q", got, want)
	}
	type summary struct {
		id      any
		notJSON bool
		code    int64
	}
	wantDropped := []summary{
		{nil, true, jsonrpc.CodeParseError},
		{int64(5), true, jsonrpc.CodeParseError},
		{int64(6), false, jsonrpc.CodeInvalidRequest},
		{nil, false, jsonrpc.CodeInvalidRequest},
		{nil, false, jsonrpc.CodeInvalidRequest},
		{nil, false, jsonrpc.CodeInvalidRequest},
		{int64(2), true, jsonrpc.CodeParseError},
	}
	if len(dropped) != len(wantDropped) {
		t.Fatalf("dropped %d: %+v, want %d", len(dropped), dropped, len(wantDropped))
	}
	for i, o := range dropped {
		if got := (summary{o.ID.Raw(), o.NotJSON, o.Code()}); got != wantDropped[i] {
			t.Errorf("dropped[%d] = %+v, want %+v", i, got, wantDropped[i])
		}
		if o.Invalid == "" || !strings.Contains(o.Message("by the test"), "by the test") {
			t.Errorf("dropped[%d] = %+v: no reason, or a message not naming the reader", i, o)
		}
	}
}
