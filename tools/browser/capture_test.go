package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// servePage serves one HTML page for every path.
func servePage(t *testing.T, html string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, html) }))
	t.Cleanup(srv.Close)
	return srv
}

// A full-page screenshot of a page 200 000 pixels tall captures the top of
// it, not a PNG as large as the page.
func TestFullPageScreenshotOfAHugePageIsClipped(t *testing.T) {
	srv := servePage(t, `<title>Tall</title><body style="margin:0"><div style="height:200000px;width:100%;background:linear-gradient(red,blue)"></div>`)
	m := newTestManager(t, loopbackPolicy(), time.Minute)
	ctx := context.Background()
	s, err := m.Open(ctx, OpenSpec{ID: "brw_test_0000000000000008"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Navigate(ctx, srv.URL+"/", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	shot, _, err := s.Screenshot(ctx, true, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(shot.PNG))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width*cfg.Height > maxFullPagePixels || !shot.Clipped || shot.PageHeight < 200000 {
		t.Fatalf("full-page screenshot is %dx%d (clipped %v, page height %d), want at most %d pixels, clipped, of a page 200000 tall",
			cfg.Width, cfg.Height, shot.Clipped, shot.PageHeight, maxFullPagePixels)
	}
}

// A page of random pixels makes a PNG too large to keep: the call fails
// with an error that says so, instead of passing the image on.
func TestScreenshotOverTheByteLimitIsRefused(t *testing.T) {
	srv := servePage(t, `<title>Noise</title><body style="margin:0"><canvas id=c width=1280 height=3000 style="display:block"></canvas><script>
const c = document.getElementById('c'), x = c.getContext('2d'), d = x.createImageData(1280, 3000);
for (let i = 0; i < d.data.length; i += 65536) crypto.getRandomValues(d.data.subarray(i, Math.min(i + 65536, d.data.length)));
for (let i = 3; i < d.data.length; i += 4) d.data[i] = 255;
x.putImageData(d, 0, 0);</script>`)
	m := newTestManager(t, loopbackPolicy(), time.Minute)
	ctx := context.Background()
	s, err := m.Open(ctx, OpenSpec{ID: "brw_test_0000000000000009"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Navigate(ctx, srv.URL+"/", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	shot, _, err := s.Screenshot(ctx, true, 60*time.Second)
	if !errors.Is(err, ErrScreenshotTooLarge) {
		t.Fatalf("screenshot of a noise page: got %d bytes, %v; want ErrScreenshotTooLarge", len(shot.PNG), err)
	}
	if !strings.Contains(err.Error(), "viewport") {
		t.Errorf("error %q does not suggest a viewport screenshot", err)
	}
}

// A page's title and links can be megabytes long; what reaches a result
// is clipped.
func TestPageTitleAndLinksAreClipped(t *testing.T) {
	srv := servePage(t, `<title>T</title><script>
document.title = 'x'.repeat(1000000);
const href = '/?' + 'q'.repeat(100000);
addEventListener('DOMContentLoaded', () => { for (let i = 0; i < 20; i++) {
  const a = document.createElement('a'); a.href = href + i; a.textContent = 'link ' + i; document.body.appendChild(a); } });
</script><body></body>`)
	m := newTestManager(t, loopbackPolicy(), time.Minute)
	ctx := context.Background()
	s, err := m.Open(ctx, OpenSpec{ID: "brw_test_000000000000000a"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Navigate(ctx, srv.URL+"/", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(st.Title); n > maxTitleChars+1 {
		t.Errorf("navigate's title has %d characters, want at most %d", n, maxTitleChars+1)
	}
	p, err := s.Snapshot(ctx, 10000, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(p.Title); n > maxTitleChars+1 {
		t.Errorf("snapshot's title has %d characters, want at most %d", n, maxTitleChars+1)
	}
	if len(p.Elements) != 20 {
		t.Fatalf("snapshot has %d elements, want the 20 links", len(p.Elements))
	}
	for _, e := range p.Elements {
		if n := utf8.RuneCountInString(e.Href); n > maxURLChars+1 {
			t.Fatalf("link %q… has an href of %d characters, want at most %d", e.Href[:40], n, maxURLChars+1)
		}
	}
}
