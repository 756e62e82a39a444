package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

func TestResourceRouting(t *testing.T) {
	id, err := NewResourceID(ResourceCommandRun, "vm-3f9a1c")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "cmd_vm-3f9a1c_") || len(id) != len("cmd_vm-3f9a1c_")+16 {
		t.Fatalf("NewResourceID = %q", id)
	}
	tests := []struct {
		id     string
		host   string
		wantOK bool
	}{
		{id, "vm-3f9a1c", true},
		{"proc_h1_0123456789abcdef", "h1", true},
		{"cmd_h1_0123", "", false},
		{"cmd__0123456789abcdef", "", false},
		{"cmd_H1_0123456789abcdef", "", false},
		{"h1_0123456789abcdef", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		host, ok := HostOfResource(tt.id)
		if host != tt.host || ok != tt.wantOK {
			t.Errorf("HostOfResource(%q) = %q, %v; want %q, %v", tt.id, host, ok, tt.host, tt.wantOK)
		}
	}
	if got := HostQueue("vm-3f9a1c"); got != "fenix-host-vm-3f9a1c" {
		t.Errorf("HostQueue = %q", got)
	}
	if _, err := NewResourceID("cmd", "Bad_Host"); err == nil {
		t.Error("NewResourceID accepted a malformed host ID")
	}
}

func TestHostIDIsStablePerDataDir(t *testing.T) {
	dir := t.TempDir()
	h1, err := NewHost(HostConfig{DataDir: dir, ProxyAddr: "off"})
	if err != nil {
		t.Fatal(err)
	}
	h1.Close()
	h2, err := NewHost(HostConfig{DataDir: dir, ProxyAddr: "off"})
	if err != nil {
		t.Fatal(err)
	}
	h2.Close()
	if h1.ID == "" || h1.ID != h2.ID || h1.Queue != HostQueue(h1.ID) {
		t.Fatalf("host IDs %q and %q, queue %q", h1.ID, h2.ID, h1.Queue)
	}
	if err := ValidateHostID(h1.ID); err != nil {
		t.Fatal(err)
	}
	stored, _ := os.ReadFile(filepath.Join(dir, "host-id"))
	if strings.TrimSpace(string(stored)) != h1.ID {
		t.Fatalf("host-id file = %q, want %q", stored, h1.ID)
	}
	h3, err := NewHost(HostConfig{DataDir: dir, ID: "override-1", ProxyAddr: "off"})
	if err != nil {
		t.Fatal(err)
	}
	h3.Close()
	if h3.ID != "override-1" {
		t.Fatalf("override ignored: %q", h3.ID)
	}
	if _, err := NewHost(HostConfig{DataDir: dir, ID: "Not Valid"}); err == nil {
		t.Fatal("NewHost accepted an invalid host ID")
	}
}

func TestHostConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"FENIX_DATA_DIR":         "/var/lib/fenix",
		"FENIX_HOST_ID":          "worker-a",
		"FENIX_SEARCH_URL":       "http://127.0.0.1:8888",
		"FENIX_FETCH_ALLOW":      "127.0.0.1,intranet.example",
		"FENIX_EXEC_ENV_ALLOW":   "GOPATH, GOCACHE",
		"FENIX_EXEC_MAX_TIMEOUT": "120",
	}
	cfg, err := HostConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	// The data directory and host ID belong to the worker's one Config
	// (internal/worker), which hands them to NewHost; the host reads
	// only its tools' settings.
	if cfg.DataDir != "" || cfg.ID != "" || cfg.SearchURL != "http://127.0.0.1:8888" ||
		len(cfg.Fetch.AllowCIDRs) != 1 || len(cfg.Fetch.AllowHosts) != 1 ||
		strings.Join(cfg.EnvAllowlist, ",") != "GOPATH,GOCACHE" || cfg.Exec.MaxTimeout.Seconds() != 120 {
		t.Fatalf("cfg = %+v", cfg)
	}
	if cfg.CommandUser != nil {
		t.Fatalf("CommandUser = %v with FENIX_COMMAND_USER unset, want commands to run as the worker", cfg.CommandUser)
	}
	env["FENIX_COMMAND_USER"] = "nobody"
	if cfg, err = HostConfigFromEnv(func(k string) string { return env[k] }); err != nil || cfg.CommandUser == nil || cfg.CommandUser.UID != 65534 {
		t.Fatalf("FENIX_COMMAND_USER=nobody: %v, %v", cfg.CommandUser, err)
	}
	env["FENIX_COMMAND_USER"] = "root"
	if _, err := HostConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "FENIX_COMMAND_USER") {
		t.Fatalf("FENIX_COMMAND_USER=root: %v, want it refused naming the variable", err)
	}
	delete(env, "FENIX_COMMAND_USER")
	if cfg.SignalsAnywhere {
		t.Fatal("signals anywhere without FENIX_COMMAND_SIGNALS")
	}
	for value, anywhere := range map[string]bool{"own": false, "any": true} {
		env["FENIX_COMMAND_SIGNALS"] = value
		if cfg, err = HostConfigFromEnv(func(k string) string { return env[k] }); err != nil || cfg.SignalsAnywhere != anywhere {
			t.Fatalf("FENIX_COMMAND_SIGNALS=%s: SignalsAnywhere %v, %v", value, cfg.SignalsAnywhere, err)
		}
	}
	env["FENIX_COMMAND_SIGNALS"] = "all"
	if _, err := HostConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "FENIX_COMMAND_SIGNALS") {
		t.Fatalf("FENIX_COMMAND_SIGNALS=all: %v, want it refused naming the variable", err)
	}
	delete(env, "FENIX_COMMAND_SIGNALS")
	if cfg.HookSignalsAnywhere {
		t.Fatal("hooks signal anywhere without FENIX_HOOK_SIGNALS")
	}
	for value, anywhere := range map[string]bool{"own": false, "any": true} {
		env["FENIX_HOOK_SIGNALS"] = value
		if cfg, err = HostConfigFromEnv(func(k string) string { return env[k] }); err != nil || cfg.HookSignalsAnywhere != anywhere || cfg.SignalsAnywhere {
			t.Fatalf("FENIX_HOOK_SIGNALS=%s: HookSignalsAnywhere %v (commands %v), %v", value, cfg.HookSignalsAnywhere, cfg.SignalsAnywhere, err)
		}
	}
	env["FENIX_HOOK_SIGNALS"] = "yes"
	if _, err := HostConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "FENIX_HOOK_SIGNALS") {
		t.Fatalf("FENIX_HOOK_SIGNALS=yes: %v, want it refused naming the variable", err)
	}
	delete(env, "FENIX_HOOK_SIGNALS")
	for value, writable := range map[string]bool{"": false, "read-only": false, "writable": true} {
		env["FENIX_COMMAND_SYSTEM"] = value
		if cfg, err = HostConfigFromEnv(func(k string) string { return env[k] }); err != nil || cfg.SystemWritable != writable {
			t.Fatalf("FENIX_COMMAND_SYSTEM=%s: SystemWritable %v, %v", value, cfg.SystemWritable, err)
		}
	}
	env["FENIX_COMMAND_SYSTEM"] = "rw"
	if _, err := HostConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "FENIX_COMMAND_SYSTEM") {
		t.Fatalf("FENIX_COMMAND_SYSTEM=rw: %v, want it refused naming the variable", err)
	}
	delete(env, "FENIX_COMMAND_SYSTEM")
	for value, want := range map[string]string{
		"":                         "frontend",
		"none":                     "",
		"frontend, 127.0.0.1:8233": "frontend,127.0.0.1:8233",
		"temporal:7243,*:7233":     "temporal:7243,*:7233",
		"dns:///temporal:7233":     "dns:///temporal:7233",
	} {
		env["FENIX_COMMAND_UNREACHABLE"] = value
		cfg, err = HostConfigFromEnv(func(k string) string { return env[k] })
		if err != nil || strings.Join(cfg.Unreachable, ",") != want {
			t.Fatalf("FENIX_COMMAND_UNREACHABLE=%q: Unreachable %q, %v; want %q", value, cfg.Unreachable, err, want)
		}
	}
	if got := WithFrontend([]string{"frontend", "127.0.0.1:8233"}, "127.0.0.1:7233"); strings.Join(got, ",") != "127.0.0.1:7233,127.0.0.1:8233" {
		t.Fatalf("WithFrontend = %q", got)
	}
	env["FENIX_COMMAND_UNREACHABLE"] = "frontend,8233"
	if _, err := HostConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), `FENIX_COMMAND_UNREACHABLE: "8233"`) {
		t.Fatalf("FENIX_COMMAND_UNREACHABLE=frontend,8233: %v, want the entry refused", err)
	}
	delete(env, "FENIX_COMMAND_UNREACHABLE")
	env["FENIX_EXEC_MAX_TIMEOUT"] = "soon"
	if _, err := HostConfigFromEnv(func(k string) string { return env[k] }); err == nil {
		t.Fatal("accepted a bad timeout")
	}
}

func TestToolsWithoutHostAreUnavailable(t *testing.T) {
	r := newRig(t)
	r.env.Host = nil
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"exec_command", map[string]any{"command_line": "true"}},
		{"command_run_read", map[string]any{"command_run_id": "cmd_h_0123456789abcdef"}},
		{"process_exec", map[string]any{"command_line": "true"}},
		{"process_list", map[string]any{}},
		{"process_stop", map[string]any{"process_run_id": "proc_h_0123456789abcdef"}},
		{"web_fetch", map[string]any{"url": "https://example.test"}},
		{"web_search", map[string]any{"query": "x"}},
		{"browser_open", map[string]any{}},
		{"browser_list", map[string]any{}},
	} {
		_, _, err := r.call(t, call.tool, call.args)
		errorIs(t, err, fenixerr.ErrToolUnavailable, "")
	}
}

func TestRegistryDescribesEveryTool(t *testing.T) {
	reg := Builtin()
	want := map[string]bool{ // name -> registry backed
		"calculator": false, "workspace_read": false, "workspace_write": false, "workspace_list": false,
		"workspace_search": false, "workspace_edit": false, "exec_command": true, "command_run_read": true,
		"process_exec": true, "process_list": true, "process_stop": true, "web_fetch": false,
		"web_search": false, "memory_write": false, "memory_read": false, "memory_list": false,
		"browser_open": true, "browser_navigate": true, "browser_snapshot": true, "browser_click": true,
		"browser_type": true, "browser_screenshot": true, "browser_close": true, "browser_list": true,
	}
	if got := strings.Join(reg.Names(), ","); len(reg.Names()) != len(want) {
		t.Fatalf("registry has %s", got)
	}
	for name, backed := range want {
		d, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("tool %s missing", name)
		}
		if d.RegistryBacked != backed {
			t.Errorf("%s registry_backed = %v, want %v", name, d.RegistryBacked, backed)
		}
		if len(d.Schema) == 0 || d.Description == "" {
			t.Errorf("%s has no schema or description", name)
		}
	}
	owners := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"command_run_read", map[string]any{"command_run_id": "cmd_h_0123456789abcdef"}, "cmd_h_0123456789abcdef"},
		{"process_stop", map[string]any{"process_run_id": "proc_h_0123456789abcdef"}, "proc_h_0123456789abcdef"},
		{"process_list", map[string]any{}, ""},
		{"exec_command", map[string]any{"command_line": "true"}, ""},
		{"browser_click", map[string]any{"browser_session_id": "brw_h_0123456789abcdef", "ref": 1}, "brw_h_0123456789abcdef"},
		{"browser_open", map[string]any{}, ""},
	}
	for _, o := range owners {
		d, _ := reg.Lookup(o.tool)
		if got := d.OwnerResource(o.args); got != o.want {
			t.Errorf("%s OwnerResource = %q, want %q", o.tool, got, o.want)
		}
	}
	_, err := reg.Review(contract.ToolCall{ToolName: "exec_command", Arguments: map[string]any{"command_line": "true"}},
		contract.AgentContext{Profile: "main", AllowedToolNames: []string{"exec_command"}})
	if err != nil {
		t.Fatal(err)
	}
}
