// Package web serves the approvals inbox as a web page: the waiting calls
// of every run with their full arguments, the hook that asked and why,
// the policy fingerprint and a Temporal Web UI link, and approve / deny
// forms with a reason. The page polls a JSON endpoint, so it updates
// without a reload.
//
// Access: every request needs a token (a bearer header, or ?token= once,
// which becomes an HttpOnly SameSite=Strict cookie scoped to the inbox's
// path). Without configured tokens the handler refuses to exist beyond
// loopback and mints one token for the local operator (LocalToken), which
// whoever starts it shows to that operator: an agent's commands run on
// the worker's host, so "a loopback client" is not "the operator".
// Forms: POSTs need the page's CSRF token (an HMAC of the viewer's
// identity) and pass net/http's CrossOriginProtection (Sec-Fetch-Site /
// Origin checks).
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fenixrt/fenix/approvals"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/workflows"
)

// MaxReasonBytes caps a decision's reason.
const MaxReasonBytes = 2048

// cookieName carries the token after a ?token= visit.
const cookieName = "fenix_inbox_token"

// Config configures the handler.
type Config struct {
	Inbox *approvals.Inbox
	// Tokens maps each token to its name, the decider it records
	// (ParseTokens reads FENIX_INBOX_TOKENS).
	Tokens map[string]string
	// ListenAddr is where the server listens; without Tokens it must be a
	// loopback address.
	ListenAddr string
	// LocalName is the decider the minted local token records (no
	// Tokens, loopback only).
	LocalName string
	Logger    *slog.Logger
}

// ParseTokens reads "name=token,name2=token2". Names are what decisions
// record; tokens must be at least 16 bytes.
func ParseTokens(spec string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, token, ok := strings.Cut(part, "=")
		name, token = strings.TrimSpace(name), strings.TrimSpace(token)
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("inbox token entry %q is not name=token", redactEntry(part))
		case len(token) < 16:
			return nil, fmt.Errorf("inbox token of %q is %d bytes: use at least 16 (e.g. openssl rand -hex 16)", name, len(token))
		}
		if other, dup := out[token]; dup {
			return nil, fmt.Errorf("inbox tokens of %q and %q are the same: each person needs their own", other, name)
		}
		out[token] = name
	}
	return out, nil
}

func redactEntry(s string) string {
	if name, _, ok := strings.Cut(s, "="); ok {
		return name + "=…"
	}
	return "…"
}

// IsLoopback says whether addr (host:port) only accepts loopback
// connections.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return netguard.IsLoopbackHost(host)
}

// ErrNeedsToken is returned by New for a tokenless inbox beyond loopback.
var ErrNeedsToken = errors.New("the approvals inbox listens beyond loopback without a token")

type handler struct {
	cfg    Config
	secret []byte
	page   *template.Template
}

// Handler serves the inbox.
type Handler struct {
	http.Handler
	localToken string
}

// LocalToken is the token New minted for an inbox configured without
// tokens, "" when tokens were configured. Show it only to the operator
// (the worker's log, starter inbox's terminal): it is what tells them
// from any other process on the host.
func (h *Handler) LocalToken() string { return h.localToken }

// LocalLink is the page's address with the minted token, for an inbox
// served at base (e.g. http://127.0.0.1:9090/inbox/); "" without one.
func (h *Handler) LocalLink(base string) string {
	if h.localToken == "" {
		return ""
	}
	return base + "?token=" + url.QueryEscape(h.localToken)
}

//go:embed page.html
var pageHTML string

// New builds the handler. Mount it under a prefix with http.StripPrefix
// (the page uses relative links), e.g. mux.Handle("/inbox/",
// http.StripPrefix("/inbox", h)).
func New(cfg Config) (*Handler, error) {
	if cfg.Inbox == nil {
		return nil, errors.New("approvals inbox handler needs an Inbox")
	}
	if len(cfg.Tokens) == 0 && !IsLoopback(cfg.ListenAddr) {
		return nil, fmt.Errorf("%w: %q is reachable from other hosts; set FENIX_INBOX_TOKENS=name=token,... or listen on 127.0.0.1", ErrNeedsToken, cfg.ListenAddr)
	}
	if cfg.LocalName == "" {
		cfg.LocalName = "local"
	}
	localToken := ""
	if len(cfg.Tokens) == 0 {
		raw := make([]byte, 16)
		if _, err := rand.Read(raw); err != nil {
			return nil, fmt.Errorf("minting the approvals inbox's local token: %w", err)
		}
		localToken = hex.EncodeToString(raw)
		cfg.Tokens = map[string]string{localToken: cfg.LocalName}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &handler{cfg: cfg, secret: make([]byte, 32), page: template.Must(template.New("inbox").Parse(pageHTML))}
	if _, err := rand.Read(h.secret); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.servePage)
	mux.HandleFunc("GET /api/pending", h.servePending)
	mux.HandleFunc("POST /api/decide", h.serveDecide)
	cop := http.NewCrossOriginProtection()
	return &Handler{Handler: h.authenticate(cop.Handler(mux)), localToken: localToken}, nil
}

type viewerKey struct{}

// authenticate resolves who is asking; the name reaches the handlers in
// the request context.
func (h *handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		name, err := h.viewer(w, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if name == "" {
			return // redirected
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, name)))
	})
}

func (h *handler) viewer(w http.ResponseWriter, r *http.Request) (string, error) {
	if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && r.URL.Path == "/" {
		if _, ok := h.lookup(t); !ok {
			return "", errors.New("the inbox token in the link is not valid")
		}
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: t, Path: pagePath(r), HttpOnly: true, SameSite: http.SameSiteStrictMode,
			Secure: r.TLS != nil, MaxAge: int((30 * 24 * time.Hour).Seconds())})
		q := r.URL.Query()
		q.Del("token")
		// Relative to the page as the browser sees it: the handler may
		// be mounted under a prefix it does not know, so http.Redirect,
		// which resolves against the stripped path, would lose it.
		target := "./"
		if len(q) > 0 {
			target += "?" + q.Encode()
		}
		w.Header().Set("Location", target)
		w.WriteHeader(http.StatusSeeOther)
		return "", nil
	}
	token := ""
	if auth := r.Header.Get("Authorization"); strings.HasPrefix(auth, "Bearer ") {
		token = strings.TrimPrefix(auth, "Bearer ")
	} else if c, err := r.Cookie(cookieName); err == nil {
		token = c.Value
	}
	if token == "" {
		return "", errors.New("the inbox needs a token: open the link with ?token=… (without FENIX_INBOX_TOKENS, the one the worker logs at start or `starter inbox` prints) or send Authorization: Bearer …")
	}
	name, ok := h.lookup(token)
	if !ok {
		return "", errors.New("the inbox token is not valid")
	}
	return name, nil
}

// pagePath is the page's path as the browser asked for it (before any
// http.StripPrefix), the cookie's scope: browsers send a host's cookies
// to every port of it, and with Path=/ the token would go along to the
// agents' services behind the worker's reverse proxy (/proxy/<id>/ on
// another port of the same host).
func pagePath(r *http.Request) string {
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil || !strings.HasPrefix(u.Path, "/") || !strings.HasSuffix(u.Path, "/") {
		return "/"
	}
	return u.Path
}

// lookup compares against every token in constant time.
func (h *handler) lookup(token string) (string, bool) {
	found := ""
	for t, name := range h.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			found = name
		}
	}
	return found, found != ""
}

func viewerOf(r *http.Request) string { v, _ := r.Context().Value(viewerKey{}).(string); return v }

// csrfToken binds a form to its viewer.
func (h *handler) csrfToken(viewer string) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte("fenix-inbox-csrf\x00" + viewer))
	return hex.EncodeToString(m.Sum(nil))
}

func (h *handler) servePage(w http.ResponseWriter, r *http.Request) {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	n := base64.StdEncoding.EncodeToString(nonce)
	w.Header().Set("Content-Security-Policy", fmt.Sprintf("default-src 'none'; script-src 'nonce-%s'; style-src 'nonce-%s'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'", n, n))
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	viewer := viewerOf(r)
	if err := h.page.Execute(w, map[string]string{"Nonce": n, "CSRF": h.csrfToken(viewer), "Viewer": viewer}); err != nil {
		h.cfg.Logger.Warn("rendering the inbox page failed", "error", err)
	}
}

func (h *handler) servePending(w http.ResponseWriter, r *http.Request) {
	l, err := h.cfg.Inbox.List(r.Context(), r.URL.Query().Get("query"))
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, l)
}

// decideResponse is api/decide's answer.
type decideResponse struct {
	OK        bool   `json:"ok"`
	Message   string `json:"message,omitempty"`
	Error     string `json:"error,omitempty"`
	DecidedBy string `json:"decided_by,omitempty"`
}

func (h *handler) serveDecide(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, decideResponse{Error: "unreadable form: " + err.Error()})
		return
	}
	viewer := viewerOf(r)
	csrf := r.PostForm.Get("csrf")
	if csrf == "" {
		csrf = r.Header.Get("X-CSRF-Token")
	}
	if subtle.ConstantTimeCompare([]byte(csrf), []byte(h.csrfToken(viewer))) != 1 {
		writeJSON(w, http.StatusForbidden, decideResponse{Error: "the form's CSRF token is missing or not this page's: reload the inbox"})
		return
	}
	d := approvals.Decision{
		WorkflowID: r.PostForm.Get("workflow_id"), RunID: r.PostForm.Get("run_id"), CallID: r.PostForm.Get("call_id"),
		ArgsHash: r.PostForm.Get("args_hash"), Decision: r.PostForm.Get("decision"), Reason: r.PostForm.Get("reason"),
		DecidedBy: viewer,
	}
	if raw := r.PostForm.Get("content"); raw != "" && d.Decision == workflows.DecisionAllow {
		// An MCP server's form, answered as a JSON object.
		if err := json.Unmarshal([]byte(raw), &d.Content); err != nil || d.Content == nil {
			writeJSON(w, http.StatusBadRequest, decideResponse{Error: "the answer to the form is not a JSON object: write it as {\"field\": value, …}"})
			return
		}
	}
	switch {
	case len(d.Reason) > MaxReasonBytes:
		writeJSON(w, http.StatusBadRequest, decideResponse{Error: fmt.Sprintf("the reason is %d bytes; at most %d", len(d.Reason), MaxReasonBytes)})
		return
	case d.ArgsHash == "":
		writeJSON(w, http.StatusBadRequest, decideResponse{Error: "the form has no args_hash: a decision must name the arguments it approves"})
		return
	}
	if d.Reason == "" {
		d.Reason = "decided in the inbox by " + viewer
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	res, err := h.cfg.Inbox.Decide(ctx, d)
	if err != nil {
		status := http.StatusConflict
		if d.Validate() != nil {
			status = http.StatusBadRequest
		}
		writeJSON(w, status, decideResponse{Error: err.Error()})
		return
	}
	h.cfg.Logger.Info("inbox decision", "workflow_id", d.WorkflowID, "call_id", d.CallID, "decision", d.Decision, "decided_by", viewer, "args_hash", d.ArgsHash)
	writeJSON(w, http.StatusOK, decideResponse{OK: true, DecidedBy: viewer,
		Message: fmt.Sprintf("%s: call %s of %s", res.Decision, res.CallID, d.WorkflowID)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
