package claudecode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/redact"
)

// Secrets in the conversation never reach the transcript file hooks read;
// the file is the worker's alone (0600) and lives only as long as its
// retention.
func TestTranscriptFilesAreRedactedPrivateAndSwept(t *testing.T) {
	w, err := NewTranscriptWriter(filepath.Join(t.TempDir(), "transcripts"))
	if err != nil {
		t.Fatal(err)
	}
	w.Redactor = redact.Default()
	secrets := []string{
		"AKIAIOSFODNN7EXAMPLE",
		"sk-proj-" + strings.Repeat("Zq9_", 10),
		"MIIEpAIBAAKCAQEA7",
		"Sup3rS3cret",
	}
	msgs := []contract.Message{
		{Role: contract.RoleUser, Content: "deploy with AKIAIOSFODNN7EXAMPLE and " + secrets[1]},
		{Role: contract.RoleUser, Content: "-----BEGIN RSA PRIVATE KEY-----\n" + secrets[2] + "\n-----END RSA PRIVATE KEY-----"},
		{Role: contract.RoleAssistant, ToolCalls: []contract.ToolCall{{CallID: "c1", ToolName: "exec_command",
			Arguments: map[string]any{"command_line": "psql postgres://app:Sup3rS3cret@db:5432/app"}}}},
		{Role: contract.RoleUser, Content: "PWD=/home/me/project"},
	}
	s := hooks.Session{SessionID: "conv-1", WorkspaceRoot: t.TempDir()}
	path, err := w.Write(s, msgs)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range secrets {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the transcript holds %q:\n%s", secret, raw)
		}
	}
	for _, want := range []string{"[REDACTED:aws_access_key_id]", "[REDACTED:openai_api_key]", "[REDACTED:private_key]", "[REDACTED:url_password]", "PWD=/home/me/project"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the transcript lacks %q:\n%s", want, raw)
		}
	}
	for _, p := range []string{path, mustEnsure(t, w, "conv-2")} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", p, info.Mode().Perm(), err)
		}
	}

	old := time.Now().Add(-8 * 24 * time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	n, err := w.Sweep(7*24*time.Hour, time.Now())
	if err != nil || n != 1 {
		t.Fatalf("Sweep deleted %d (%v), want the one old transcript", n, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the old transcript is still there: %v", err)
	}
	if _, err := os.Stat(w.PathFor("conv-2")); err != nil {
		t.Errorf("the fresh transcript was swept: %v", err)
	}
	// A swept session's next write recreates its file.
	if _, err := w.Write(s, msgs); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("rewriting a swept transcript: %v", err)
	}
}

func mustEnsure(t *testing.T, w *TranscriptWriter, session string) string {
	t.Helper()
	p, err := w.Ensure(session)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
