package codec

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.temporal.io/sdk/converter"
)

// Environment variables read by ServerConfigFromEnv.
const (
	// EnvAuthToken is the bearer token codec server clients must send.
	EnvAuthToken = "FENIX_CODEC_AUTH_TOKEN"
	// EnvUIOrigins lists Web UI origins allowed by CORS, comma-separated.
	EnvUIOrigins = "FENIX_CODEC_UI_ORIGIN"
	// EnvNamespaces lists namespaces the server decodes for, comma-separated.
	EnvNamespaces = "FENIX_CODEC_NAMESPACES"
	// EnvAllowUnauthenticated ("true") serves without a token: for a local
	// dev server, whose Web UI has no login and so sends no token.
	EnvAllowUnauthenticated = "FENIX_CODEC_ALLOW_UNAUTHENTICATED"
)

// DefaultMaxRequestBytes bounds a codec request body; Temporal caps one
// payload at 2 MB and the UI sends a handful per request.
const DefaultMaxRequestBytes = 32 << 20

// ServerConfig guards the codec server.
type ServerConfig struct {
	// Tokens are the accepted bearer tokens (several allow rotation).
	Tokens []string
	// Authorize, when set, replaces the token check, e.g. to verify the
	// OIDC access token the Web UI forwards; a non-nil error means 401 and
	// its text is the response body.
	Authorize func(*http.Request) error
	// AllowUnauthenticated serves without a token. Only for a local dev
	// server: anyone who can reach the endpoint can read payloads.
	AllowUnauthenticated bool
	// UIOrigins are the Web UI origins (scheme://host[:port]) whose
	// browser requests are allowed, e.g. http://localhost:8233.
	UIOrigins []string
	// Namespaces, when set, restrict requests to these X-Namespace values.
	Namespaces []string
	// MaxRequestBytes bounds the request body (default
	// DefaultMaxRequestBytes).
	MaxRequestBytes int64
}

// ServerConfigFromEnv reads FENIX_CODEC_AUTH_TOKEN, FENIX_CODEC_UI_ORIGIN,
// FENIX_CODEC_NAMESPACES and FENIX_CODEC_ALLOW_UNAUTHENTICATED.
func ServerConfigFromEnv(getenv func(string) string) (ServerConfig, error) {
	var cfg ServerConfig
	if t := strings.TrimSpace(getenv(EnvAuthToken)); t != "" {
		cfg.Tokens = []string{t}
	}
	cfg.UIOrigins = splitList(getenv(EnvUIOrigins))
	cfg.Namespaces = splitList(getenv(EnvNamespaces))
	if v := strings.TrimSpace(getenv(EnvAllowUnauthenticated)); v != "" {
		open, err := strconv.ParseBool(v)
		if err != nil {
			return ServerConfig{}, fmt.Errorf("%s=%q: use true or false", EnvAllowUnauthenticated, v)
		}
		cfg.AllowUnauthenticated = open
	}
	return cfg, nil
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

type server struct {
	next         http.Handler
	authorizeFn  func(*http.Request) error
	tokenDigests [][sha256.Size]byte
	open         bool
	origins      []string
	namespaces   []string
	maxBytes     int64
}

// NewHTTPHandler is a codec server for the Temporal Web UI and CLI: POST
// <prefix>/encode and <prefix>/decode (the SDK's handler) behind CORS for
// the configured UI origins, bearer-token authorization and the optional
// namespace restriction. Mount it under a prefix such as "/codec/" and set
// the UI's codec endpoint to http://host:port/codec.
func NewHTTPHandler(codec converter.PayloadCodec, cfg ServerConfig) (http.Handler, error) {
	if isNil(codec) {
		return nil, errors.New("codec server needs a payload codec: set FENIX_CODEC_KEY or FENIX_CODEC_KEY_FILE")
	}
	s := &server{
		next:        converter.NewPayloadCodecHTTPHandler(codec),
		authorizeFn: cfg.Authorize,
		open:        cfg.AllowUnauthenticated,
		namespaces:  cfg.Namespaces,
		maxBytes:    cfg.MaxRequestBytes,
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxRequestBytes
	}
	for _, t := range cfg.Tokens {
		if strings.TrimSpace(t) == "" {
			return nil, errors.New("codec server: an empty bearer token is configured")
		}
		s.tokenDigests = append(s.tokenDigests, sha256.Sum256([]byte(strings.TrimSpace(t))))
	}
	if len(s.tokenDigests) == 0 && s.authorizeFn == nil && !s.open {
		return nil, fmt.Errorf("codec server: no bearer token configured (%s); it would serve decrypted payloads to anyone (set %s=true only for a local dev server)", EnvAuthToken, EnvAllowUnauthenticated)
	}
	for _, o := range cfg.UIOrigins {
		norm, err := normalizeOrigin(o)
		if err != nil {
			return nil, err
		}
		s.origins = append(s.origins, norm)
	}
	return s, nil
}

// normalizeOrigin accepts exactly what browsers send in Origin.
func normalizeOrigin(o string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(o, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("codec server UI origin %q: want scheme://host[:port] such as http://localhost:8233 (no path, no wildcard)", o)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	allowedOrigin := origin != "" && slices.Contains(s.origins, strings.ToLower(origin))
	if allowedOrigin {
		// Set on every answer, errors included, so the UI can read them.
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
	}

	if r.Method == http.MethodOptions {
		// Preflights carry no credentials, so they are answered before
		// authorization.
		if !allowedOrigin {
			http.Error(w, fmt.Sprintf("origin %q is not allowed; add it to %s", origin, EnvUIOrigins), http.StatusForbidden)
			return
		}
		h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodPost {
		h.Set("Allow", "POST, OPTIONS")
		http.Error(w, "codec server: use POST .../encode or .../decode", http.StatusMethodNotAllowed)
		return
	}
	if !s.open {
		if msg := s.authorize(r); msg != "" {
			h.Set("WWW-Authenticate", `Bearer realm="fenix-codec"`)
			http.Error(w, msg, http.StatusUnauthorized)
			return
		}
	}
	if len(s.namespaces) > 0 {
		ns := r.Header.Get("X-Namespace")
		if !slices.Contains(s.namespaces, ns) {
			http.Error(w, fmt.Sprintf("namespace %q is not served by this codec server (%s)", ns, EnvNamespaces), http.StatusForbidden)
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.maxBytes)
	s.next.ServeHTTP(w, r)
}

// authorize returns "" for an authorized request, else why not. Digests
// make the token comparison constant-time regardless of token length.
func (s *server) authorize(r *http.Request) string {
	if s.authorizeFn != nil {
		if err := s.authorizeFn(r); err != nil {
			return "codec server: " + err.Error()
		}
		return ""
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "codec server: missing bearer token (Authorization: Bearer <token>)"
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	match := 0
	for _, want := range s.tokenDigests {
		match |= subtle.ConstantTimeCompare(got[:], want[:])
	}
	if match != 1 {
		return "codec server: bearer token is not valid"
	}
	return ""
}
