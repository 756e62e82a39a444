package main

import (
	"errors"
	"log/slog"

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

// logInboxLink tells the operator where the inbox is; without configured
// tokens the link carries the token minted at start, which only the
// operator reading the worker's log has.
func logInboxLink(h *web.Handler, addr string, logger *slog.Logger) {
	page := "http://" + addr + "/inbox/"
	if link := h.LocalLink(page); link != "" {
		logger.Info("approvals inbox for the local operator (the token is minted at each start; set FENIX_INBOX_TOKENS for lasting ones)", "open", link)
		return
	}
	logger.Info("approvals inbox", "open", page)
}
