package netguard

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
)

// Asker decides about a destination a DomainList neither allows nor
// denies, for the command whose connection it is: a person answers (the
// run's decide_permission), as Claude Code asks its user about a domain
// its sandbox does not allow. why says who decided, or why not.
type Asker func(ctx context.Context, host string, port int) (allowed bool, why string)

// Identify maps the credentials a command's proxy variables carry (see
// ProxyUser) to the Asker of that command, nil for none.
type Identify func(user, password string) Asker

// ProxyUser is the user name in the proxy URLs a command is given; the
// password names the command.
const ProxyUser = "fenix"

type askerKey struct{}

// WithAsker makes ask the Asker of the dials made with ctx.
func WithAsker(ctx context.Context, ask Asker) context.Context {
	if ask == nil {
		return ctx
	}
	return context.WithValue(ctx, askerKey{}, ask)
}

// AskerFrom is ctx's Asker, nil without one.
func AskerFrom(ctx context.Context) Asker {
	ask, _ := ctx.Value(askerKey{}).(Asker)
	return ask
}

// proxyCredentials reads a request's Proxy-Authorization (Basic).
func proxyCredentials(r *http.Request) (user, password string, ok bool) {
	scheme, value, found := strings.Cut(r.Header.Get("Proxy-Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(raw), ":")
}
