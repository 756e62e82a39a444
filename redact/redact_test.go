package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDefaultPatterns(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"aws key", "key AKIAIOSFODNN7EXAMPLE here", "key [REDACTED:aws_access_key_id] here"},
		{"github token", "token=ghp_" + strings.Repeat("a", 36), "token=[REDACTED:github_token]"},
		{"openai key", "OPENAI_API_KEY sk-proj-abcdefghijklmnopqrstuvwx", "OPENAI_API_KEY [REDACTED:openai_api_key]"},
		{"bearer keeps the scheme", "Authorization: Bearer abcdefghijklmnop0123", "Authorization: Bearer [REDACTED:bearer_token]"},
		{"url password keeps the user", "postgres://fenix:hunter22@db:5432/audit", "postgres://fenix:[REDACTED:url_password]db:5432/audit"},
		{"assigned secret keeps the name", `DB_PASSWORD="s3cr3t-value"`, `DB_PASSWORD="[REDACTED:assigned_secret]"`},
		{"private key block", "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\ny", "x\n[REDACTED:private_key]\ny"},
		{"ordinary text untouched", "The calculator returned 4. password reset is documented.", "The calculator returned 4. password reset is documented."},
		{"short values untouched", "secret=abc", "secret=abc"},
		{"the working directory is not a password", "PWD=/home/me/project\nOLDPWD=/tmp/scratch-dir", "PWD=/home/me/project\nOLDPWD=/tmp/scratch-dir"},
		{"a home-relative working directory neither", "pwd: ~/src/fenix", "pwd: ~/src/fenix"},
		{"a pwd that is a password is", "login --pwd=hunter2hunter2", "login --pwd=[REDACTED:assigned_secret]"},
		{"openai project key", "key sk-proj-" + strings.Repeat("Ab1_", 10) + " end", "key [REDACTED:openai_api_key] end"},
		{"postgres DSN", "dsn=postgresql://app:Sup3rS3cret@db.internal:5432/app?sslmode=disable", "dsn=postgresql://app:[REDACTED:url_password]db.internal:5432/app?sslmode=disable"},
	}
	r := Default()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := r.String(tc.in)
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestJSONRedactsNestedStringsAndKeepsNumbers(t *testing.T) {
	raw := json.RawMessage(`{"exit_status":0,"big":12345678901234567890,"stdout":"AKIAIOSFODNN7EXAMPLE","lines":["ok","token: ghp_` + strings.Repeat("b", 36) + `"]}`)
	out, n, err := Default().JSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("redacted %d secrets, want 2", n)
	}
	for _, want := range []string{`"big":12345678901234567890`, `[REDACTED:aws_access_key_id]`, `[REDACTED:github_token]`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("%s lacks %s", out, want)
		}
	}
	same, n, _ := Default().JSON(json.RawMessage(`{"a": 1}`))
	if n != 0 || string(same) != `{"a": 1}` {
		t.Errorf("a clean document changed: %s", same)
	}
}

func TestNewRejectsBadPatterns(t *testing.T) {
	if _, err := New(Pattern{Name: "x", Regex: "("}); err == nil || !strings.Contains(err.Error(), `pattern "x"`) {
		t.Errorf("bad regex: %v", err)
	}
	if _, err := New(Pattern{Name: "y", Regex: "a", Keep: "nope"}); err == nil {
		t.Error("unknown keep group accepted")
	}
	var nilRedactor *Redactor
	if s, n := nilRedactor.String("AKIAIOSFODNN7EXAMPLE"); n != 0 || s != "AKIAIOSFODNN7EXAMPLE" {
		t.Error("a nil redactor redacts nothing")
	}
}

func BenchmarkRedactOneMegabyte(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"clean", "GET /api/v1/items?page=3 200 12ms user=42\n"},
		{"keywords", "rotating the secret for service api, password policy ok\n"},
		{"secrets", "export DB_PASSWORD=hunter2hunter2 AWS=AKIAIOSFODNN7EXAMPLE\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			text := strings.Repeat(bc.line, 1<<20/len(bc.line))
			r := Default()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				r.String(text)
			}
		})
	}
}
