// Package redact removes secrets from tool output before it reaches
// workflow history, reports or the model: API keys and tokens, private
// keys, passwords in assignments and connection strings. Patterns are RE2
// regular expressions, so matching is linear in the output size.
package redact

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Pattern is one kind of secret. Keep, when set, names a capture group
// that is kept (a header name, a user name) while the rest of the match is
// replaced.
type Pattern struct {
	Name  string `json:"name"`
	Regex string `json:"regex"`
	Keep  string `json:"keep,omitempty"`
	// Hints are lower-case literals of which at least one occurs in every
	// match; the regex runs only on text containing one, which keeps
	// ordinary output fast. Empty means always run.
	Hints []string `json:"hints,omitempty"`
}

// DefaultPatterns are the secrets redacted out of the box.
var DefaultPatterns = []Pattern{
	{Name: "private_key", Regex: `-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`, Hints: []string{"private key-----"}},
	{Name: "aws_access_key_id", Regex: `\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`, Hints: []string{"akia", "asia"}},
	{Name: "github_token", Regex: `\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`, Hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{Name: "openai_api_key", Regex: `\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}`, Hints: []string{"sk-"}},
	{Name: "slack_token", Regex: `\bxox[abposr]-[A-Za-z0-9-]{10,}`, Hints: []string{"xox"}},
	{Name: "google_api_key", Regex: `\bAIza[0-9A-Za-z_-]{35}\b`, Hints: []string{"aiza"}},
	{Name: "jwt", Regex: `\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`, Hints: []string{"eyj"}},
	{Name: "bearer_token", Regex: `(?i)(?P<keep>\bbearer\s+)[A-Za-z0-9._~+/=-]{16,}`, Keep: "keep", Hints: []string{"bearer"}},
	{Name: "url_password", Regex: `(?P<keep>\b[a-z][a-z0-9+.-]*://[^:/\s@]+:)[^@\s/]{3,}@`, Keep: "keep", Hints: []string{"://"}},
	{Name: "assigned_secret", Regex: `(?i)(?P<keep>(?:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)["']?\s*[:=]\s*["']?)[^\s"',;]{6,}`, Keep: "keep",
		Hints: []string{"password", "passwd", "secret", "api_key", "api-key", "apikey", "access_token", "access-token", "accesstoken", "auth_token", "auth-token", "authtoken"}},
	// "pwd" alone is also the shell's working directory (PWD=/home/me,
	// OLDPWD=...): a password only as a whole word, and never a path.
	{Name: "assigned_secret", Regex: `(?i)(?P<keep>\bpwd["']?\s*[:=]\s*["']?)[^\s"',;/~.$][^\s"',;]{5,}`, Keep: "keep", Hints: []string{"pwd"}},
}

type compiled struct {
	name    string
	re      *regexp.Regexp
	keepIdx int
	hints   []string
}

// Redactor replaces secrets with "[REDACTED:<name>]". A nil Redactor
// redacts nothing.
type Redactor struct {
	patterns []compiled
}

// New compiles patterns; an invalid pattern is an error naming it.
func New(patterns ...Pattern) (*Redactor, error) {
	r := &Redactor{}
	for _, p := range patterns {
		if p.Name == "" {
			return nil, fmt.Errorf("redaction pattern %q has no name", p.Regex)
		}
		re, err := regexp.Compile(p.Regex)
		if err != nil {
			return nil, fmt.Errorf("redaction pattern %q: %w", p.Name, err)
		}
		c := compiled{name: p.Name, re: re, keepIdx: -1, hints: p.Hints}
		if p.Keep != "" {
			if c.keepIdx = re.SubexpIndex(p.Keep); c.keepIdx < 0 {
				return nil, fmt.Errorf("redaction pattern %q keeps group %q, which the regex does not define", p.Name, p.Keep)
			}
		}
		r.patterns = append(r.patterns, c)
	}
	return r, nil
}

// Default is a Redactor with DefaultPatterns.
func Default() *Redactor {
	r, err := New(DefaultPatterns...)
	if err != nil {
		panic(err)
	}
	return r
}

// LoadFile reads extra patterns from a JSON file: [{"name", "regex", "keep"}].
func LoadFile(path string) ([]Pattern, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("redaction patterns: %w", err)
	}
	var patterns []Pattern
	if err := json.Unmarshal(raw, &patterns); err != nil {
		return nil, fmt.Errorf("redaction patterns %s: expected a JSON list of {\"name\", \"regex\"}: %w", path, err)
	}
	return patterns, nil
}

// String redacts s and reports how many secrets it replaced.
func (r *Redactor) String(s string) (string, int) {
	if r == nil || s == "" {
		return s, 0
	}
	total := 0
	lower := strings.ToLower(s)
	for _, p := range r.patterns {
		if !hinted(lower, p.hints) {
			continue
		}
		replacement := "[REDACTED:" + p.name + "]"
		s = p.re.ReplaceAllStringFunc(s, func(match string) string {
			total++
			if p.keepIdx < 0 {
				return replacement
			}
			return p.re.FindStringSubmatch(match)[p.keepIdx] + replacement
		})
	}
	return s, total
}

func hinted(lower string, hints []string) bool {
	if len(hints) == 0 {
		return true
	}
	for _, h := range hints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}

// JSON redacts every string in a JSON document, keys included. Numbers
// keep their exact text; a document without secrets is returned as is.
func (r *Redactor) JSON(raw json.RawMessage) (json.RawMessage, int, error) {
	if r == nil || len(raw) == 0 {
		return raw, 0, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, 0, fmt.Errorf("redact: tool result is not JSON: %w", err)
	}
	count := 0
	doc = r.walk(doc, &count)
	if count == 0 {
		return raw, 0, nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, 0, err
	}
	return out, count, nil
}

func (r *Redactor) walk(v any, count *int) any {
	switch x := v.(type) {
	case string:
		s, n := r.String(x)
		*count += n
		return s
	case []any:
		for i := range x {
			x[i] = r.walk(x[i], count)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			key, n := r.String(k)
			*count += n
			out[key] = r.walk(val, count)
		}
		return out
	}
	return v
}
