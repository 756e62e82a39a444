package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/mattn/go-isatty"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/approvals"
	"github.com/fenixrt/fenix/approvals/web"
	"github.com/fenixrt/fenix/internal/worker"
)

// inboxHandler is the approvals inbox for the operational HTTP server,
// nil when it is off or would listen beyond loopback without a token
// (logged: metrics on 0.0.0.0 keep working without an inbox).
func inboxHandler(c client.Client, namespace string, cfg worker.ProcessConfig, logger *slog.Logger) (*web.Handler, error) {
	if cfg.HTTPAddr == "off" {
		return nil, nil
	}
	tokens, err := web.ParseTokens(cfg.InboxTokens)
	if err != nil {
		return nil, err
	}
	if namespace == "" {
		namespace = client.DefaultNamespace
	}
	h, err := web.New(web.Config{Inbox: &approvals.Inbox{Client: c, Namespace: namespace, UIBase: cfg.UIURL},
		Tokens: tokens, ListenAddr: cfg.HTTPAddr, LocalName: "local operator (loopback)", Logger: logger})
	if errors.Is(err, web.ErrNeedsToken) {
		logger.Warn("approvals inbox not served", "reason", err.Error())
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

// logInboxLink tells the operator where the inbox is. Without configured
// tokens the link carries the token minted at start, which tells the
// operator from every other process on the host: it goes into the log
// only when the log is a terminal. A log that is kept (journald splits a
// user's messages into a journal that user may read, or a file) could be
// read by an agent's command running as the worker's user, which would
// then approve its own calls; so otherwise the link is written to
// <data-dir>/inbox-link, readable by the worker's user only and out of
// confined commands' reach, and the log names the file.
func logInboxLink(h *web.Handler, addr string, to inboxLinkTo, logger *slog.Logger) {
	page := "http://" + addr + "/inbox/"
	link := h.LocalLink(page)
	switch {
	case link == "":
		logger.Info("approvals inbox", "open", page)
	case to.terminal:
		logger.Info("approvals inbox for the local operator (the token is minted at each start; set FENIX_INBOX_TOKENS for lasting ones)", "open", link)
	default:
		path := filepath.Join(to.dir, inboxLinkFile)
		if err := writePrivateFile(path, link+"\n"); err != nil {
			logger.Error("approvals inbox: the local operator's link could not be written, so the inbox cannot be opened until a restart or FENIX_INBOX_TOKENS", "link_file", path, "error", err)
			return
		}
		logger.Info("approvals inbox for the local operator: its link, with a token minted at this start, is in link_file (the log is not a terminal, and a kept log could be read by commands; set FENIX_INBOX_TOKENS for lasting tokens)", "open", page, "link_file", path)
	}
}

// inboxLinkTo is where the local operator's inbox link goes: the log when
// it is a terminal, else a file in dir.
type inboxLinkTo struct {
	dir      string
	terminal bool
}

// inboxLinkFile is where, under the data directory, the local operator's
// inbox link is written when the log is not a terminal.
const inboxLinkFile = "inbox-link"

// writePrivateFile replaces path with content, readable by this user
// only. O_EXCL after the removal: a link planted in its place is not
// followed.
func writePrivateFile(path, content string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
