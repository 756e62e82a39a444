package tools

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/browser"
)

// memBlobs is a BlobStore in memory.
type memBlobs struct {
	mu    sync.Mutex
	blobs map[string][]byte
}

func (m *memBlobs) Put(_ context.Context, data []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ref := "blob-" + string(rune('a'+len(m.blobs)))
	m.blobs[ref] = data
	return ref, nil
}

func browserRig(t *testing.T) (*testRig, *httptest.Server) {
	t.Helper()
	if _, err := browser.FindChromium(); err != nil {
		t.Skipf("browser tools need Chromium: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<title>Start</title><p>Hello</p><a href="/next">Next page</a>`)
	}))
	t.Cleanup(srv.Close)
	return newRig(t, withLocalFetch()), srv
}

func TestBrowserToolsProjectAndClassify(t *testing.T) {
	r, srv := browserRig(t)
	p, _, err := r.call(t, "browser_open", map[string]any{"url": srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := p.Metadata["browser_session_id"].(string)
	if !strings.HasPrefix(id, "brw_test-host_") || p.Content != "Opened "+srv.URL+`/ — "Start" in browser session `+id+" on host test-host." {
		t.Fatalf("browser_open projected %q %v", p.Content, p.Metadata)
	}

	_, _, err = r.call(t, "browser_click", map[string]any{"browser_session_id": id, "ref": 1, "selector": "a"})
	errorIs(t, err, fenixerr.ErrValidation, "")
	_, _, err = r.call(t, "browser_click", map[string]any{"browser_session_id": "brw_other-host_0123456789abcdef", "ref": 1})
	errorIs(t, err, fenixerr.ErrToolUnavailable, "wrong_host")
	_, _, err = r.call(t, "browser_navigate", map[string]any{"browser_session_id": "brw_test-host_0123456789abcdef", "url": srv.URL})
	errorIs(t, err, fenixerr.ErrValidation, "not_found")
	_, _, err = r.call(t, "browser_click", map[string]any{"browser_session_id": id, "ref": 9})
	errorIs(t, err, fenixerr.ErrValidation, "element_not_found")
	_, _, err = r.call(t, "browser_navigate", map[string]any{"browser_session_id": id, "url": "http://169.254.169.254/latest/meta-data/"})
	errorIs(t, err, fenixerr.ErrValidation, "destination_not_allowed")
	if fe := fenixerr.As(err); fe.Class != fenixerr.ClassAuthorization || !strings.Contains(fe.Message, "link-local") {
		t.Fatalf("metadata address refusal: %+v", fe)
	}

	p, _, err = r.call(t, "browser_click", map[string]any{"browser_session_id": id, "selector": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `Clicked a "Next page"; page is now ` + srv.URL + `/next — "Start".`; p.Content != want {
		t.Fatalf("browser_click projected %q, want %q", p.Content, want)
	}

	_, _, err = r.call(t, "browser_screenshot", map[string]any{"browser_session_id": id})
	errorIs(t, err, fenixerr.ErrToolUnavailable, "")
	blobs := &memBlobs{blobs: map[string][]byte{}}
	r.env.Blobs = blobs
	p, _, err = r.call(t, "browser_screenshot", map[string]any{"browser_session_id": id})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := p.Metadata["ref"].(string)
	if png := blobs.blobs[ref]; len(png) < 8 || string(png[1:4]) != "PNG" || p.Metadata["width"] != 1280 {
		t.Fatalf("screenshot %v: %d bytes stored under %q", p.Metadata, len(png), ref)
	}
	if attached, err := AttachmentsOf(p.Metadata); err != nil || len(attached) != 1 ||
		attached[0] != (Attachment{Type: AttachmentImage, MIMEType: "image/png", Ref: ref, Bytes: len(blobs.blobs[ref])}) {
		t.Fatalf("attachments = %+v, %v, want the screenshot, which an MCP client of the gateway gets as an image", attached, err)
	}

	p, _, err = r.call(t, "browser_list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Content, id+" at "+srv.URL+`/next — "Start", open for`) {
		t.Fatalf("browser_list projected %q", p.Content)
	}

	// Worker shutdown closes the session and its browser.
	profiles := r.host.browsers.ProfilePrefix()
	r.host.Close()
	if pids := browser.ProcessesUsingProfile(profiles); len(pids) > 0 {
		t.Fatalf("Chromium %v survives Host.Close", pids)
	}
	_, _, err = r.call(t, "browser_snapshot", map[string]any{"browser_session_id": id})
	errorIs(t, err, fenixerr.ErrValidation, "browser_session_closed")
	if !strings.Contains(err.Error(), "the worker shut down") {
		t.Fatalf("after shutdown: %v", err)
	}
}
