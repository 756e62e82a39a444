package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/approvals"
	"github.com/fenixrt/fenix/approvals/approvalstest"
	"github.com/fenixrt/fenix/approvals/web"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

const aliceToken = "alice-token-0123456789"

func server(t *testing.T, tokens map[string]string) (*httptest.Server, *approvalstest.Client) {
	srv, fake, _ := serverWithHandler(t, tokens)
	return srv, fake
}

func serverWithHandler(t *testing.T, tokens map[string]string) (*httptest.Server, *approvalstest.Client, *web.Handler) {
	args := map[string]any{"expression": "6 * 7"}
	fake := &approvalstest.Client{Runs: []*approvalstest.Run{{WorkflowID: "wf-1", RunID: "run-1", Pending: []workflows.PendingPermission{{
		CallID: "call-1", ToolName: "calculator", Permission: "run_calculator", Arguments: args, ArgsHash: contract.ArgumentsHash(args),
		RequestedAt: time.Now().Add(-time.Minute), Deadline: time.Now().Add(time.Hour)}}}}}
	h, err := web.New(web.Config{Inbox: &approvals.Inbox{Client: fake, Namespace: "default"}, Tokens: tokens,
		ListenAddr: "127.0.0.1:0", LocalName: "local-op"})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/inbox/", http.StripPrefix("/inbox", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, fake, h
}

var csrfRe = regexp.MustCompile(`const csrf = "([0-9a-f]+)"`)

func page(t *testing.T, c *http.Client, u string) string {
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	return string(raw)
}

func decideForm(csrf, hash string) url.Values {
	return url.Values{"csrf": {csrf}, "workflow_id": {"wf-1"}, "run_id": {"run-1"}, "call_id": {"call-1"},
		"args_hash": {hash}, "decision": {"allow"}, "reason": {"fine"}}
}

func post(t *testing.T, c *http.Client, u string, form url.Values, header map[string]string) (int, map[string]any) {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestTokenlessInboxRefusesToListenBeyondLoopback(t *testing.T) {
	_, err := web.New(web.Config{Inbox: &approvals.Inbox{}, ListenAddr: "0.0.0.0:9090"})
	assert.ErrorIs(t, err, web.ErrNeedsToken)
	assert.ErrorContains(t, err, "FENIX_INBOX_TOKENS")
	_, err = web.New(web.Config{Inbox: &approvals.Inbox{}, ListenAddr: "0.0.0.0:9090", Tokens: map[string]string{aliceToken: "alice"}})
	assert.NoError(t, err)
}

func TestParseTokens(t *testing.T) {
	got, err := web.ParseTokens(" alice=" + aliceToken + ", bob=bob-token-0123456789 ")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{aliceToken: "alice", "bob-token-0123456789": "bob"}, got)
	for spec, want := range map[string]string{
		"alice=short":                          "at least 16",
		"justatoken0123456789":                 "is not name=token",
		"a=" + aliceToken + ",b=" + aliceToken: `of "a" and "b" are the same`,
	} {
		_, err := web.ParseTokens(spec)
		assert.ErrorContains(t, err, want, spec)
		assert.NotContains(t, err.Error(), aliceToken, "errors never echo a token")
	}
}

// Without configured tokens the inbox is loopback-only, and a loopback
// client is not necessarily the operator: an agent's commands run on the
// same host. The handler mints a token that only the operator is shown.
func TestLoopbackInboxNeedsTheMintedTokenAndCSRFToken(t *testing.T) {
	srv, fake, h := serverWithHandler(t, nil)
	c := srv.Client()
	hash := contract.ArgumentsHash(map[string]any{"expression": "6 * 7"})

	for _, u := range []string{srv.URL + "/inbox/", srv.URL + "/inbox/api/pending"} {
		resp, err := c.Get(u)
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a loopback client without the token: %s", u)
		assert.NotRegexp(t, csrfRe, string(raw))
	}
	status, _ := post(t, c, srv.URL+"/inbox/api/decide", decideForm("", hash), map[string]string{"Sec-Fetch-Site": "same-origin"})
	assert.Equal(t, http.StatusUnauthorized, status)

	token := h.LocalToken()
	require.Len(t, token, 32)
	assert.Equal(t, "http://127.0.0.1:9090/inbox/?token="+token, h.LocalLink("http://127.0.0.1:9090/inbox/"))
	bearer := map[string]string{"Authorization": "Bearer " + token}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/inbox/", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfRe.FindStringSubmatch(string(raw))
	require.Len(t, m, 2, "the page carries its CSRF token")

	status, out := post(t, c, srv.URL+"/inbox/api/decide", decideForm("", hash), bearer)
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, out["error"], "CSRF token")
	for k, v := range map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"} {
		hdr := map[string]string{"Authorization": bearer["Authorization"], k: v}
		status, _ = post(t, c, srv.URL+"/inbox/api/decide", decideForm(m[1], hash), hdr)
		assert.Equal(t, http.StatusForbidden, status, "a cross-site post is refused even with both tokens: %s", k)
	}

	require.Empty(t, fake.Updates)
	status, out = post(t, c, srv.URL+"/inbox/api/decide", decideForm(m[1], hash), bearer)
	require.Equal(t, http.StatusOK, status, "%v", out)
	sent, _ := fake.LastDecision()
	assert.Equal(t, "local-op", sent.DecidedBy)
	assert.Equal(t, hash, sent.ArgsHash)
	assert.Equal(t, "fine", sent.Reason)
}

// Browsers send a host's cookies to all its ports, and the worker's
// reverse proxy serves agents' services (/proxy/<id>/) on another port
// of the same host: the token cookie is scoped to the inbox's path.
func TestInboxCookieDoesNotReachOtherPathsOfTheHost(t *testing.T) {
	srv, _ := server(t, map[string]string{aliceToken: "alice"})
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := *srv.Client()
	c.Jar = jar
	page(t, &c, srv.URL+"/inbox/?token="+aliceToken)
	inbox, _ := url.Parse(srv.URL + "/inbox/api/pending")
	require.Len(t, jar.Cookies(inbox), 1, "the inbox gets its cookie")
	u, _ := url.Parse(srv.URL)
	service, _ := url.Parse("http://" + u.Hostname() + ":1/proxy/proc_h_0123456789abcdef/")
	assert.Empty(t, jar.Cookies(service), "the inbox token goes to an agent's service on another port")
}

func TestTokenInboxNamesTheDeciderAndTradesTheLinkTokenForACookie(t *testing.T) {
	srv, fake := server(t, map[string]string{aliceToken: "alice"})
	c := srv.Client()
	resp, err := c.Get(srv.URL + "/inbox/api/pending")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	noFollow := *c
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = noFollow.Get(srv.URL + "/inbox/?token=" + aliceToken + "&workflow=wf-1&call=call-1")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.NotContains(t, resp.Header.Get("Location"), "token", "the token leaves the address bar")
	assert.Contains(t, resp.Header.Get("Location"), "call=call-1")
	cookie := resp.Cookies()[0]
	assert.True(t, cookie.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookie.SameSite)

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/inbox/api/pending", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err = c.Do(req)
	require.NoError(t, err)
	var l approvals.Listing
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&l))
	resp.Body.Close()
	require.Len(t, l.Calls, 1)

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	u, _ := url.Parse(srv.URL)
	jar.SetCookies(u, []*http.Cookie{cookie})
	withCookie := *c
	withCookie.Jar = jar
	m := csrfRe.FindStringSubmatch(page(t, &withCookie, srv.URL+"/inbox/"))
	require.Len(t, m, 2)

	status, out := post(t, c, srv.URL+"/inbox/api/decide", decideForm(m[1], l.Calls[0].ArgsHash), map[string]string{"Cookie": cookie.Name + "=" + cookie.Value})
	require.Equal(t, http.StatusOK, status, "%v", out)
	assert.Equal(t, "alice", out["decided_by"])
	sent, _ := fake.LastDecision()
	assert.Equal(t, "alice", sent.DecidedBy)
}

// An MCP server's form is answered with a JSON object in the "content"
// field of Approve; what is not a JSON object is refused before the run
// is asked.
func TestInboxSendsTheAnswerToAnMCPServersForm(t *testing.T) {
	srv, fake := server(t, map[string]string{aliceToken: "alice"})
	c := srv.Client()
	bearer := map[string]string{"Authorization": "Bearer " + aliceToken}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/inbox/", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := c.Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(raw), `c.requested_by === "mcp.elicitation"`, "the page offers the form's answer box")
	m := csrfRe.FindStringSubmatch(string(raw))
	require.Len(t, m, 2)
	hash := contract.ArgumentsHash(map[string]any{"expression": "6 * 7"})

	form := decideForm(m[1], hash)
	form.Set("content", `["not", "an", "object"]`)
	status, out := post(t, c, srv.URL+"/inbox/api/decide", form, bearer)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, out["error"], "not a JSON object")

	form.Set("content", `{"account": "acme"}`)
	status, out = post(t, c, srv.URL+"/inbox/api/decide", form, bearer)
	require.Equal(t, http.StatusOK, status, "%v", out)
	sent, _ := fake.LastDecision()
	assert.Equal(t, map[string]any{"account": "acme"}, sent.Content)
}
