package claudecode

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// A transcript that grew gets only its new messages' lines rendered and
// redacted, after a copy of the file; anything else (an earlier message
// changed, the file changed behind the writer's back) rewrites it whole.
// Either way the file is what a fresh writer would write.
func TestTranscriptGrowsByAppendingTheNewLines(t *testing.T) {
	newWriter := func() *TranscriptWriter {
		w, err := NewTranscriptWriter(filepath.Join(t.TempDir(), "transcripts"))
		if err != nil {
			t.Fatal(err)
		}
		w.Redactor = redact.Default()
		return w
	}
	s := hooks.Session{SessionID: "conv-grow", WorkspaceRoot: t.TempDir()}
	fresh := func(msgs []contract.Message) string {
		p, err := newWriter().Write(s, msgs)
		if err != nil {
			t.Fatal(err)
		}
		return readFile(t, p)
	}
	w := newWriter()
	write := func(msgs []contract.Message) string {
		t.Helper()
		p, err := w.Write(s, msgs)
		if err != nil {
			t.Fatal(err)
		}
		return readFile(t, p)
	}
	msgs := []contract.Message{
		{Role: contract.RoleUser, Content: "deploy the app"},
		{Role: contract.RoleAssistant, ToolCalls: []contract.ToolCall{{CallID: "c1", ToolName: "exec_command",
			Arguments: map[string]any{"command_line": "psql postgres://app:Sup3rS3cret@db:5432/app"}}}},
	}
	write(msgs)
	msgs = append(msgs, contract.Message{Role: contract.RoleTool, ToolCallID: "c1", Name: "exec_command", Content: "key AKIAIOSFODNN7EXAMPLE"},
		contract.Message{Role: contract.RoleAssistant, Content: "Deployed."})
	if got, want := write(msgs), fresh(msgs); got != want {
		t.Fatalf("grown transcript:\n%s\nwant what a fresh writer writes:\n%s", got, want)
	}
	if got := readFile(t, w.PathFor(s.SessionID)); strings.Contains(got, "AKIAIOSFODNN7EXAMPLE") || strings.Count(got, "\n") != 4 {
		t.Fatalf("the appended lines are not redacted, or not one per message:\n%s", got)
	}

	// The first lines are copied, not rendered again: a same-length edit
	// made behind the writer's back survives the next append.
	p := w.PathFor(s.SessionID)
	edited := strings.Replace(readFile(t, p), "deploy the app", "DEPLOY THE APP", 1)
	if err := os.WriteFile(p, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, contract.Message{Role: contract.RoleUser, Content: "thanks"})
	if got := write(msgs); !strings.Contains(got, "DEPLOY THE APP") || !strings.HasSuffix(got, strings.SplitAfter(fresh(msgs), "\n")[4]) {
		t.Fatalf("append did not keep the file's lines and add the new one:\n%s", got)
	}

	// An earlier message changed: the file is written whole.
	msgs[0].Content = "deploy the other app"
	if got, want := write(msgs), fresh(msgs); got != want {
		t.Fatalf("after an earlier message changed:\n%s\nwant:\n%s", got, want)
	}
	// The file lost its end: written whole, not appended to.
	if err := os.WriteFile(p, []byte(readFile(t, p)[:40]), 0o600); err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, contract.Message{Role: contract.RoleAssistant, Content: "You are welcome."})
	if got, want := write(msgs), fresh(msgs); got != want {
		t.Fatalf("after the file was cut short:\n%s\nwant:\n%s", got, want)
	}
	// The parallel calls of a step write the grown transcript at once.
	msgs = append(msgs, contract.Message{Role: contract.RoleUser, Content: "and now the tests"})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := w.Write(s, msgs); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, want := readFile(t, p), fresh(msgs); got != want {
		t.Fatalf("after concurrent writes:\n%s\nwant:\n%s", got, want)
	}
	// The same messages again leave the file alone.
	before, _ := os.Stat(p)
	write(msgs)
	if after, _ := os.Stat(p); !os.SameFile(before, after) {
		t.Error("an unchanged transcript was written again")
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A Claude Code script selects its session's lines by sessionId, which
// was the run's ID while hooks got the conversation's session_id; and the
// conversation's SessionEnd (after its idle timeout, outside any run) got
// an empty file, where Claude Code's gets the session's transcript. The
// lines carry the conversation, and the conversation's latest transcript
// is what its own events read; a subagent's run does not replace it.
func TestTranscriptsFollowTheConversation(t *testing.T) {
	w, err := NewTranscriptWriter(filepath.Join(t.TempDir(), "transcripts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Latest("conv-1"); ok {
		t.Fatal("a conversation with no transcript has a latest one")
	}
	run := hooks.Session{SessionID: "run-2", ConversationSessionID: "conv-1", WorkspaceRoot: t.TempDir()}
	msgs := []contract.Message{{Role: contract.RoleUser, Content: "ship it"}, {Role: contract.RoleAssistant, Content: "shipped"}}
	p, err := w.Write(run, msgs)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), `"sessionId":"conv-1"`); n != 2 {
		t.Errorf("%d lines carry the conversation:\n%s", n, raw)
	}
	sub := hooks.Session{SessionID: "run-2-sub", ConversationSessionID: "conv-1", IsSubagent: true, WorkspaceRoot: run.WorkspaceRoot}
	if _, err := w.Write(sub, []contract.Message{{Role: contract.RoleUser, Content: "review"}}); err != nil {
		t.Fatal(err)
	}
	latest, ok := w.Latest("conv-1")
	if !ok {
		t.Fatal("no latest transcript for the conversation")
	}
	if got, _ := os.ReadFile(latest); string(got) != string(raw) {
		t.Errorf("the conversation's latest transcript is\n%s\nwant the main agent's\n%s", got, raw)
	}
}
