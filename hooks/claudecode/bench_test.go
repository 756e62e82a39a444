package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
	"github.com/fenixrt/fenix/redact"
)

// How PreToolUse grows with the number of command hooks, loaded through
// the settings loader and run through the registry as the worker does:
//
//	go test -run '^$' -bench 'PreToolUseHooks' -benchtime 20x ./hooks/claudecode
//
// Every hook is its own script (identical handlers would be folded into
// one), which reads its input and exits 0. "unmatched" hooks have a
// matcher naming another tool: they must cost nothing.
func BenchmarkPreToolUseHooks(b *testing.B) {
	for _, c := range []struct {
		name     string
		n        int
		matcher  string
		confined bool
	}{
		{"hooks=0", 0, "exec_command", false},
		{"hooks=1", 1, "exec_command", false},
		{"hooks=1-confined", 1, "exec_command", true},
		{"hooks=4", 4, "exec_command", false},
		{"hooks=16", 16, "exec_command", false},
		{"hooks=16-unmatched", 16, "workspace_write", false},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			var launcher Launcher
			if c.confined {
				// As the worker confines hooks: a data directory beside
				// the workspace, hidden.
				confiner, err := confine.New(confine.Policy{Hidden: []string{b.TempDir()}, SignalsAnywhere: true})
				if err != nil {
					b.Skipf("no confinement here: %v", err)
				}
				b.Cleanup(confiner.Close)
				launcher = confiner
			}
			r := benchHookRegistry(b, dir, c.n, c.matcher, launcher)
			ev := commandPreEvent(dir)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res := r.RunPreToolUse(context.Background(), ev)
				if res.Blocked() {
					b.Fatalf("blocked: %+v", res.Action)
				}
				if got := len(res.Decisions); c.matcher == "exec_command" && got < c.n {
					b.Fatalf("%d hook decisions, want at least %d", got, c.n)
				}
			}
		})
	}
}

// benchHookRegistry writes n scripts and a settings file naming them on
// PreToolUse with matcher, and loads it as the worker does.
func benchHookRegistry(b *testing.B, dir string, n int, matcher string, launcher Launcher) *hooks.Registry {
	b.Helper()
	var handlers []map[string]any
	for i := range n {
		script := filepath.Join(dir, fmt.Sprintf("hook%02d.sh", i))
		if err := os.WriteFile(script, []byte("#!/bin/bash\ncat >/dev/null; exit 0\n"), 0o755); err != nil {
			b.Fatal(err)
		}
		handlers = append(handlers, map[string]any{"type": "command", "command": script})
	}
	settings := map[string]any{"hooks": map[string]any{}}
	if n > 0 {
		settings["hooks"] = map[string]any{"PreToolUse": []any{map[string]any{"matcher": matcher, "hooks": handlers}}}
	}
	data, err := json.Marshal(settings)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	sources, err := LoadSources([]string{path}, LoadOptions{Launcher: launcher})
	if err != nil {
		b.Fatal(err)
	}
	r := hooks.NewRegistry()
	r.Add(builtin.NewCancellationHook())
	for _, src := range sources {
		r.AddSource(src.Registered())
	}
	if got := len(r.Names()); got != n+1 {
		b.Fatalf("%d hooks registered, want %d", got, n+1)
	}
	return r
}

// benchMessages is a transcript of about size bytes of content: messages
// of up to 1 KiB, with a tool call and its result every tenth message.
func benchMessages(size int) []contract.Message {
	const sentence = "The deploy step finished. Logs show 42 warnings and 0 errors; see build/out.log.\n"
	text := strings.Repeat(sentence, size/len(sentence)+1)[:size]
	per := min(1<<10, max(size/8, 1))
	var msgs []contract.Message
	for i, off := 0, 0; off < size; i++ {
		end := min(off+per, size)
		m := contract.Message{Role: contract.RoleUser, Content: text[off:end]}
		switch i % 10 {
		case 1, 3:
			m.Role = contract.RoleAssistant
		case 8:
			m.Role = contract.RoleAssistant
			m.ToolCalls = []contract.ToolCall{{CallID: fmt.Sprintf("call-%d", i), ToolName: "exec_command", Arguments: map[string]any{"command": "make test"}}}
		case 9:
			m.Role = contract.RoleTool
			m.ToolCallID = fmt.Sprintf("call-%d", i-1)
		}
		msgs = append(msgs, m)
		off = end
	}
	return msgs
}

var transcriptSizes = []struct {
	name string
	size int
}{{"transcript=10KB", 10 << 10}, {"transcript=1MB", 1 << 20}, {"transcript=10MB", 10 << 20}}

// How the transcript file a command hook reads costs with the
// transcript's size, with the worker's redactor:
//
//	go test -run '^$' -bench 'TranscriptWrite' -benchtime 5x ./hooks/claudecode
//
// "grown" is a transcript that grew by a message since the last write (a
// step: the file is copied and the new line rendered, redacted and
// appended); "changed" is one whose last message is another (the file is
// rendered, redacted and replaced whole); "same" is the same messages
// again (the file is left alone).
func BenchmarkTranscriptWrite(b *testing.B) {
	for _, sz := range transcriptSizes {
		msgs := benchMessages(sz.size)
		b.Run(sz.name+"/grown", func(b *testing.B) {
			w := benchTranscriptWriter(b)
			s := hooks.Session{SessionID: "wf-bench", WorkspaceRoot: "/work"}
			grown := slices.Clone(msgs)
			if _, err := w.Write(s, grown); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(sz.size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				grown = append(grown, contract.Message{Role: contract.RoleUser, Content: fmt.Sprint("step ", i)})
				if _, err := w.Write(s, grown); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(sz.name+"/changed", func(b *testing.B) {
			w := benchTranscriptWriter(b)
			s := hooks.Session{SessionID: "wf-bench", WorkspaceRoot: "/work"}
			b.SetBytes(int64(sz.size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				grown := append(msgs[:len(msgs):len(msgs)], contract.Message{Role: contract.RoleUser, Content: fmt.Sprint("step ", i)})
				if _, err := w.Write(s, grown); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(sz.name+"/same", func(b *testing.B) {
			w := benchTranscriptWriter(b)
			s := hooks.Session{SessionID: "wf-bench", WorkspaceRoot: "/work"}
			if _, err := w.Write(s, msgs); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(sz.size))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := w.Write(s, msgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The same as TranscriptWrite/same, through WriteSet with a context-store
// reference, as the worker's hook stages call it: the second and later
// events of a step find the file written from the same reference.
//
//	go test -run '^$' -bench 'TranscriptWriteSet' -benchtime 5x ./hooks/claudecode
func BenchmarkTranscriptWriteSet(b *testing.B) {
	for _, sz := range transcriptSizes {
		msgs := benchMessages(sz.size)
		b.Run(sz.name+"/same-ref", func(b *testing.B) {
			w := benchTranscriptWriter(b)
			s := hooks.Session{SessionID: "wf-bench", WorkspaceRoot: "/work"}
			set := contract.MessageSet{Ref: "ctx-sha256-bench", Count: len(msgs)}
			loads := 0
			load := func() ([]contract.Message, error) { loads++; return msgs, nil }
			if _, err := w.WriteSet(s, set, load); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := w.WriteSet(s, set, load); err != nil {
					b.Fatal(err)
				}
			}
			if loads != 1 {
				b.Fatalf("the set was loaded %d times, want 1", loads)
			}
		})
	}
}

func benchTranscriptWriter(b *testing.B) *TranscriptWriter {
	b.Helper()
	w, err := NewTranscriptWriter(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	w.Redactor = redact.Default()
	return w
}
