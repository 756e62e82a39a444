package mcp

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// authorizingTransport does for an HTTP+SSE session what the SDK's
// Streamable HTTP transport does with its OAuthHandler, which the SDK's
// SSE transport lacks: every request (the stream's GET and the posted
// messages) carries the handler's access token, and a 401 or 403 has the
// handler authorize (sign in, refresh, or say why not) before the request
// is sent once more.
type authorizingTransport struct {
	base    http.RoundTripper
	handler auth.OAuthHandler
}

func (t *authorizingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	send := func() (*http.Response, error) {
		r := req.Clone(req.Context())
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r.Body = body
		}
		ts, err := t.handler.TokenSource(req.Context())
		if err != nil {
			return nil, err
		}
		if ts != nil {
			tok, err := ts.Token()
			if err != nil {
				return nil, err
			}
			tok.SetAuthHeader(r)
		}
		return t.base.RoundTrip(r)
	}
	resp, err := send()
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	if req.Body != nil && req.GetBody == nil {
		return resp, nil // the body cannot be sent again
	}
	if err := t.handler.Authorize(req.Context(), req, resp); err != nil {
		return nil, err
	}
	return send()
}
