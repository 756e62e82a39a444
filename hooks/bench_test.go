package hooks

import (
	"fmt"
	"strings"
	"testing"
)

type benchNamedHook struct {
	Base
	name string
}

func (h benchNamedHook) Name() string { return h.name }

// The policy fingerprint every Review, PreToolUse and PermissionRequest
// verdict records, over allow-lists of 15 and 500 tools (a registry of a
// 1 KB settings file and five hooks):
//
//	go test -run '^$' -bench 'PolicyFingerprint' -benchtime 2000x ./hooks
func BenchmarkPolicyFingerprint(b *testing.B) {
	r := NewRegistry()
	r.RecordSource("/project/.claude/settings.json", []byte(`{"hooks": {"PreToolUse": [{"matcher": "exec_command", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}, "padding": "`+strings.Repeat("x", 900)+`"}`))
	for _, name := range []string{"cancellation", "command:guard.sh", "audit_log", "redaction", "browser_session_end"} {
		r.Add(benchNamedHook{name: name})
	}
	for _, n := range []int{15, 500} {
		allowed := make([]string, n)
		for i := range allowed {
			allowed[i] = fmt.Sprintf("tool_%03d", n-i)
		}
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if fp := r.PolicyFingerprint(allowed); len(fp) != 16 {
					b.Fatal(fp)
				}
			}
		})
	}
}
