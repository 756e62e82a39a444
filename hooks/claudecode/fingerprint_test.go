package claudecode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
)

const guardSettings = `{"hooks": {"PreToolUse": [{"matcher": "exec_command", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}`

func registryWithFile(t *testing.T, dir, content string, goHooks ...hooks.AgentHook) *hooks.Registry {
	t.Helper()
	path := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	r := hooks.NewRegistry()
	r.Add(builtin.NewCancellationHook())
	if err := AddFile(r, path); err != nil {
		t.Fatal(err)
	}
	for _, h := range goHooks {
		r.Add(h)
	}
	return r
}

type namedHook struct {
	hooks.Base

	name string
}

func (h namedHook) Name() string { return h.name }

func TestPolicyFingerprint(t *testing.T) {
	allowed := []string{"calculator", "exec_command"}
	base := registryWithFile(t, t.TempDir(), guardSettings).PolicyFingerprint(allowed)
	if len(base) != 16 {
		t.Fatalf("fingerprint %q: want 16 hex digits", base)
	}
	if got := registryWithFile(t, t.TempDir(), guardSettings).PolicyFingerprint(allowed); got != base {
		t.Errorf("the same settings file in another directory: fingerprint %s, want %s (paths are not policy)", got, base)
	}
	if got := registryWithFile(t, t.TempDir(), guardSettings).PolicyFingerprint([]string{"exec_command", "calculator", "calculator"}); got != base {
		t.Errorf("the same allow-list in another order: fingerprint %s, want %s", got, base)
	}

	changed := map[string]string{
		"settings file contents": registryWithFile(t, t.TempDir(), `{"hooks": {"PreToolUse": [{"matcher": "exec_command|workspace_write", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}`).PolicyFingerprint(allowed),
		"allow-list":             registryWithFile(t, t.TempDir(), guardSettings).PolicyFingerprint([]string{"calculator"}),
		"a Go hook added":        registryWithFile(t, t.TempDir(), guardSettings, namedHook{name: "no-force-push"}).PolicyFingerprint(allowed),
		"no settings file": func() string {
			r := hooks.NewRegistry()
			r.Add(builtin.NewCancellationHook())
			return r.PolicyFingerprint(allowed)
		}(),
	}
	seen := map[string]string{base: "base"}
	for what, fp := range changed {
		if prev, dup := seen[fp]; dup {
			t.Errorf("changing the %s gives fingerprint %s, the same as %s", what, fp, prev)
		}
		seen[fp] = what
	}

	a := hooks.NewRegistry()
	a.Add(namedHook{name: "first"})
	a.Add(namedHook{name: "second"})
	b := hooks.NewRegistry()
	b.Add(namedHook{name: "second"})
	b.Add(namedHook{name: "first"})
	if a.PolicyFingerprint(nil) == b.PolicyFingerprint(nil) {
		t.Error("hook order changes verdicts (first Block wins) but not the fingerprint")
	}
}

func TestAddFileRecordsTheSource(t *testing.T) {
	dir := t.TempDir()
	r := registryWithFile(t, dir, guardSettings)
	sources := r.PolicySources()
	if len(sources) != 1 || sources[0].Path != filepath.Join(dir, "hooks.json") || string(sources[0].Data) != guardSettings {
		t.Fatalf("sources = %+v, want the one file as read", sources)
	}
	if got := r.Names(); len(got) != 2 || got[0] != "cancellation" {
		t.Errorf("hooks = %v, want cancellation then the file's command hook", got)
	}
	if err := AddFile(hooks.NewRegistry(), filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing settings file loaded without error")
	}
}

// TestPolicyFingerprintIsStable pins the fingerprint of one policy, as
// computed before the hooks package split into wings: recorded verdicts
// carry it, and policy-diff compares it with the candidate's.
func TestPolicyFingerprintIsStable(t *testing.T) {
	r := registryWithFile(t, t.TempDir(), guardSettings, namedHook{name: "no-force-push"})
	for _, tc := range []struct {
		allowed []string
		want    string
	}{
		{[]string{"exec_command", "calculator"}, "e1b3e3f8d0c4068e"},
		{nil, "1c2799727125086d"},
	} {
		if got := r.PolicyFingerprint(tc.allowed); got != tc.want {
			t.Errorf("PolicyFingerprint(%v) = %s, want %s", tc.allowed, got, tc.want)
		}
	}
}

func TestRegisteredDescribesTheSource(t *testing.T) {
	dir := t.TempDir()
	r := registryWithFile(t, dir, guardSettings)
	info := r.Sources()
	if len(info) != 1 || info[0].Path != filepath.Join(dir, "hooks.json") || info[0].Hooks != 1 || string(info[0].Data) != guardSettings {
		t.Fatalf("sources = %+v, want the one file with its one hook and bytes", info)
	}
	if got := info[0].Labels; got["kind"] != string(SourceFile) || got["dialect"] != string(DialectFenix) {
		t.Errorf("labels = %v, want kind %q and dialect %q", got, SourceFile, DialectFenix)
	}
}
