package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fenixrt/fenix/tools/mcp"
)

// An operator's reload (SIGHUP) of .mcp.json used to leave the servers
// the worker started with running until its next start: a server removed
// because an agent abused it kept serving. Reconfigure stops what is no
// longer configured, or now kept out by the settings, restarts what
// changed, starts what is new and leaves an unchanged server's process
// alone.
func TestReconfigureStopsRestartsAndStartsServers(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	server := func(extra string) string {
		return `{"command": "` + exe + `", "env": {"FENIX_TEST_MCP_SERVER": "1"` + extra + `}}`
	}
	dir := t.TempDir()
	m, reg, _ := startManagerIn(t, dir, `{"mcpServers": {"kept": `+server("")+`, "changed": `+server("")+`, "removed": `+server("")+`, "denied": `+server("")+`}}`, nil)
	pids := map[string]int{}
	for _, st := range m.Status() {
		if !st.Connected || st.PID == 0 {
			t.Fatalf("%s: %+v, want connected", st.Name, st)
		}
		pids[st.Name] = st.PID
	}

	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {"kept": `+server("")+`, "changed": `+server(`, "SOMETHING": "new"`)+`, "added": `+server("")+`, "denied": `+server("")+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := mcp.Load([]string{dir}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	rules := mcp.ServerRules{Denied: []mcp.ServerMatch{{Name: "denied"}}}
	r, err := m.Reconfigure(loaded.Servers, rules, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for what, pair := range map[string][2][]string{
		"kept":      {r.Kept, {"kept"}},
		"restarted": {r.Restarted, {"changed"}},
		"started":   {r.Started, {"added"}},
		"stopped":   {r.Stopped, {"denied", "removed"}},
	} {
		if !slices.Equal(pair[0], pair[1]) {
			t.Errorf("%s: %v, want %v", what, pair[0], pair[1])
		}
	}
	if len(r.Refused) != 1 || !strings.Contains(r.Refused[0], "denied") {
		t.Errorf("refused %q, want the denied server named", r.Refused)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	now := map[string]int{}
	for _, st := range m.Status() {
		now[st.Name] = st.PID
	}
	if now["kept"] != pids["kept"] {
		t.Errorf("the unchanged server was restarted: pid %d, was %d", now["kept"], pids["kept"])
	}
	if now["changed"] == 0 || now["changed"] == pids["changed"] {
		t.Errorf("the changed server runs as pid %d, was %d: want a new process", now["changed"], pids["changed"])
	}
	for _, name := range []string{"removed", "denied"} {
		if _, ok := now[name]; ok {
			t.Errorf("%s is still configured: %v", name, m.Status())
		}
		deadline := time.Now().Add(10 * time.Second)
		for syscall.Kill(pids[name], 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if syscall.Kill(pids[name], 0) == nil {
			t.Errorf("%s's process %d is still running", name, pids[name])
		}
	}
	if _, err := call(t, reg, "mcp__added__fail", map[string]any{}, "mcp__added__fail"); err == nil || !strings.Contains(err.Error(), "the disk is full") {
		t.Errorf("the added server's tool: %v, want its error result", err)
	}
	if _, err := call(t, reg, "mcp__removed__fail", map[string]any{}, "mcp__removed__fail"); err == nil || strings.Contains(err.Error(), "the disk is full") {
		t.Errorf("the removed server's tool: %v, want it unknown", err)
	}
	if _, err := call(t, reg, "mcp__denied__fail", map[string]any{}, "mcp__denied__fail"); err == nil || !strings.Contains(err.Error(), "not started on this worker") {
		t.Errorf("the denied server's tool: %v, want it refused naming the setting", err)
	}
}
