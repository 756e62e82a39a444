package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/approvals"
	"github.com/fenixrt/fenix/approvals/web"
)

// The local operator's inbox token goes into the log only when the log is
// a terminal; a kept log could be read by an agent's command of the same
// user, which would approve its own calls with it. Otherwise the link is
// in a file of the data directory only the worker's user can read.
func TestInboxTokenStaysOutOfAKeptLog(t *testing.T) {
	h, err := web.New(web.Config{Inbox: &approvals.Inbox{}, ListenAddr: "127.0.0.1:0", LocalName: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	link := h.LocalLink("http://127.0.0.1:7070/inbox/")
	if !strings.Contains(link, "token=") {
		t.Fatalf("no local token minted: %q", link)
	}

	var log bytes.Buffer
	dir := t.TempDir()
	// A link planted in its place is replaced, not followed.
	elsewhere := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(elsewhere, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, inboxLinkFile)); err != nil {
		t.Fatal(err)
	}
	logInboxLink(h, "127.0.0.1:7070", inboxLinkTo{dir: dir}, slog.New(slog.NewTextHandler(&log, nil)))
	if kept, _ := os.ReadFile(elsewhere); string(kept) != "keep me\n" {
		t.Errorf("the planted link was followed: %s holds %q", elsewhere, kept)
	}
	if strings.Contains(log.String(), "token=") {
		t.Errorf("the kept log holds the token: %s", log.String())
	}
	path := filepath.Join(dir, inboxLinkFile)
	if !strings.Contains(log.String(), path) {
		t.Errorf("the log does not name %s: %s", path, log.String())
	}
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(written)) != link {
		t.Errorf("%s holds %q, want %q", path, written, link)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, %v; want 0600", path, info.Mode(), err)
	}

	log.Reset()
	logInboxLink(h, "127.0.0.1:7070", inboxLinkTo{dir: t.TempDir(), terminal: true}, slog.New(slog.NewTextHandler(&log, nil)))
	if !strings.Contains(log.String(), "token=") {
		t.Errorf("a terminal's log lacks the link with its token: %s", log.String())
	}
}
