package claudecode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// project writes <dir>/.claude/<name> and loads every settings file there.
func project(t *testing.T, dir string, files map[string]string) []*Source {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, ".claude", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sources, err := LoadSources([]string{dir}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sources
}

func call(root, tool string, args map[string]any) hooks.PreToolUseEvent {
	return hooks.PreToolUseEvent{Session: hooks.Session{WorkspaceRoot: root}, ToolName: tool, ToolInput: args}
}

const briefSettings = `{"permissions": {"deny": ["Read(./.env)"], "ask": ["Bash(git push:*)"], "allow": ["Bash(ls:*)"]}}`

func TestPermissionRulesJudgeCallsThroughTheAliases(t *testing.T) {
	dir := t.TempDir()
	home, _ := os.UserHomeDir()
	p := NewPermissions(project(t, dir, map[string]string{"settings.json": `{"permissions": {
		"deny": ["Read(./.env)", "Edit(/config/**)", "Read(//etc/shadow)", "Read(~/.ssh/**)", "WebFetch(domain:evil.example)", "mcp__vault", "Bash(rm -rf *)"],
		"ask": ["Bash(git push:*)", "mcp__github__create_pull_request", "Agent(reviewer)"],
		"allow": ["Bash(ls:*)", "Bash(git status)", "Bash(npm run *)", "Read", "WebFetch(domain:*.example.com)", "mcp__github"]}}`}))
	if p == nil {
		t.Fatal("no permissions loaded")
	}
	tests := []struct {
		name string
		tool string
		args map[string]any
		want hooks.Kind
		rule string
	}{
		{"Read rule on workspace_read", "workspace_read", map[string]any{"path": ".env"}, hooks.KindDeny, "Read(./.env)"},
		{"a path that cleans to .env", "workspace_read", map[string]any{"path": "src/../.env"}, hooks.KindDeny, "Read(./.env)"},
		{"Read rule covers Grep", "workspace_search", map[string]any{"path": ".env", "pattern": "KEY"}, hooks.KindDeny, "Read(./.env)"},
		{"other files are read", "workspace_read", map[string]any{"path": "src/main.go"}, hooks.KindAllow, "Read"},
		{"/ is the project root", "workspace_write", map[string]any{"path": "config/app.yaml"}, hooks.KindDeny, "Edit(/config/**)"},
		{"Edit rule covers Write", "workspace_edit", map[string]any{"path": "config/a/b.yaml"}, hooks.KindDeny, "Edit(/config/**)"},
		{"// is absolute", "workspace_read", map[string]any{"path": "/etc/shadow"}, hooks.KindDeny, "Read(//etc/shadow)"},
		{"~/ is home", "workspace_read", map[string]any{"path": filepath.Join(home, ".ssh", "id_rsa")}, hooks.KindDeny, "Read(~/.ssh/**)"},
		{"prefix rule", "exec_command", map[string]any{"command_line": "ls -la"}, hooks.KindAllow, "Bash(ls:*)"},
		{"prefix rule, bare", "exec_command", map[string]any{"command_line": "ls"}, hooks.KindAllow, "Bash(ls:*)"},
		{"prefix needs a word boundary", "exec_command", map[string]any{"command_line": "lsof -i"}, "", ""},
		{"ask rule", "exec_command", map[string]any{"command_line": "git push origin main"}, hooks.KindPermissionRequired, "Bash(git push:*)"},
		{"ask rule inside a compound", "exec_command", map[string]any{"command_line": "ls && git push --force"}, hooks.KindPermissionRequired, "Bash(git push:*)"},
		{"ask rule on process_exec", "process_exec", map[string]any{"command_line": "git push"}, hooks.KindPermissionRequired, "Bash(git push:*)"},
		{"deny rule behind sudo", "exec_command", map[string]any{"command_line": "sudo rm -rf /"}, hooks.KindDeny, "Bash(rm -rf *)"},
		{"deny rule with a wildcard, unmatched", "exec_command", map[string]any{"command_line": "rm -f build"}, "", ""},
		{"deny rule with a wildcard, matched", "exec_command", map[string]any{"command_line": "rm -rf build"}, hooks.KindDeny, "Bash(rm -rf *)"},
		{"every command of a compound allowed", "exec_command", map[string]any{"command_line": "ls && git status"}, hooks.KindAllow, "Bash(ls:*), Bash(git status)"},
		{"one command not allowed", "exec_command", map[string]any{"command_line": "ls; curl x"}, "", ""},
		{"an expansion is never allowed, and may be a denied rm", "exec_command", map[string]any{"command_line": "ls $(cat list)"}, hooks.KindPermissionRequired, "Bash(rm -rf *)"},
		{"a dynamic program asks", "exec_command", map[string]any{"command_line": "$TOOL -rf build"}, hooks.KindPermissionRequired, "Bash(rm -rf *)"},
		{"exact command", "exec_command", map[string]any{"command_line": "git status --short"}, "", ""},
		{"wildcard in the middle", "exec_command", map[string]any{"command_line": "npm run test"}, hooks.KindAllow, "Bash(npm run *)"},
		{"domain deny", "web_fetch", map[string]any{"url": "https://evil.example/x"}, hooks.KindDeny, "WebFetch(domain:evil.example)"},
		{"domain allow by wildcard", "web_fetch", map[string]any{"url": "https://docs.example.com/x"}, hooks.KindAllow, "WebFetch(domain:*.example.com)"},
		{"other domains unjudged", "web_fetch", map[string]any{"url": "https://example.org/"}, "", ""},
		{"mcp server rule", "mcp__vault__read_secret", map[string]any{}, hooks.KindDeny, "mcp__vault"},
		{"mcp tool rule", "mcp__github__create_pull_request", map[string]any{}, hooks.KindPermissionRequired, "mcp__github__create_pull_request"},
		{"mcp server allow", "mcp__github__list_issues", map[string]any{}, hooks.KindAllow, "mcp__github"},
		{"a server is not a prefix of another", "mcp__githubx__list", map[string]any{}, "", ""},
		{"subagent profile", "spawn_subagent", map[string]any{"task": "review", "profile": "reviewer"}, hooks.KindPermissionRequired, "Agent(reviewer)"},
		{"unaliased tools are untouched", "calculator", map[string]any{"expression": "1+1"}, "", ""},
	}
	for _, tc := range tests {
		v := p.Evaluate(call(dir, tc.tool, tc.args), false)
		if v.Decision != tc.want || v.Rule != tc.rule {
			t.Errorf("%s: %s %v = %+v, want %q by %q", tc.name, tc.tool, tc.args, v, tc.want, tc.rule)
		}
		if v.Decision != "" && (v.Source != filepath.Join(dir, ".claude", "settings.json") || !strings.Contains(v.Reason, strings.Split(tc.rule, ", ")[0])) {
			t.Errorf("%s: verdict %+v must name its rule and file", tc.name, v)
		}
	}
}

func TestPermissionPrecedenceDenyAskAllow(t *testing.T) {
	dir := t.TempDir()
	p := NewPermissions(project(t, dir, map[string]string{
		"settings.json":       `{"permissions": {"allow": ["Bash(git:*)", "Bash(rm:*)"], "ask": ["Bash(git push:*)"]}}`,
		"settings.local.json": `{"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash(git push:*)"]}}`,
	}))
	for cmd, want := range map[string]hooks.Kind{
		"git status":      hooks.KindAllow,
		"git push":        hooks.KindPermissionRequired, // ask beats a more specific allow
		"rm -rf build":    hooks.KindDeny,               // deny in one file beats allow in another
		"git status && x": "",
	} {
		if v := p.Evaluate(call(dir, "exec_command", map[string]any{"command_line": cmd}), false); v.Decision != want {
			t.Errorf("%q = %+v, want %q", cmd, v, want)
		}
	}
}

func TestPermissionModes(t *testing.T) {
	dir := t.TempDir()
	// The local file's mode outranks the project's; rules of both count.
	p := NewPermissions(project(t, dir, map[string]string{
		"settings.json":       `{"permissions": {"defaultMode": "plan", "allow": ["Bash(ls:*)"]}}`,
		"settings.local.json": `{"permissions": {"defaultMode": "dontAsk"}}`,
	}))
	if p.Mode() != "dontAsk" {
		t.Fatalf("mode = %q, want the local file's dontAsk", p.Mode())
	}
	if v := p.Evaluate(call(dir, "exec_command", map[string]any{"command_line": "ls"}), false); v.Decision != hooks.KindAllow {
		t.Errorf("dontAsk, allowed by rule: %+v", v)
	}
	v := p.Evaluate(call(dir, "exec_command", map[string]any{"command_line": "make"}), false)
	if v.Decision != hooks.KindDeny || v.Rule != "defaultMode dontAsk" || v.Source != filepath.Join(dir, ".claude", "settings.local.json") {
		t.Errorf("dontAsk, no rule: %+v", v)
	}
	if v := p.Evaluate(call(dir, "exec_command", map[string]any{"command_line": "make"}), true); v.Decision != "" {
		t.Errorf("dontAsk, a hook allowed it: %+v, want no verdict", v)
	}
	// A session's mode overrides the files'.
	ev := call(dir, "workspace_write", map[string]any{"path": "a.txt"})
	ev.PermissionMode = "plan"
	if v := p.Evaluate(ev, false); v.Decision != hooks.KindDeny || v.Rule != "defaultMode plan" {
		t.Errorf("plan mode, write: %+v", v)
	}
	ev = call(dir, "workspace_read", map[string]any{"path": "a.txt"})
	ev.PermissionMode, ev.ReadOnly = "plan", true
	if v := p.Evaluate(ev, false); v.Decision != "" {
		t.Errorf("plan mode, read: %+v, want no verdict", v)
	}
}

func TestPermissionRulesWithHooks(t *testing.T) {
	dir := t.TempDir()
	sources := project(t, dir, map[string]string{"settings.json": briefSettings})
	script := func(name, body string) *ExternalHook {
		return newCommandHook(t, cmdHook{Matcher: "Bash", Command: writeScript(t, dir, name, body), Dialect: DialectClaude})
	}
	allow := script("allow.sh", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"trusted"}}'`)
	deny := script("deny.sh", `echo "no ls today" >&2; exit 2`)
	ask := script("ask.sh", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}'`)
	run := func(cmd string, hs ...hooks.AgentHook) hooks.PreToolUseResult {
		r := hooks.NewRegistry()
		for _, h := range hs {
			r.Add(h)
		}
		r.SetPermissionPolicy(NewPermissions(sources))
		return r.RunPreToolUse(context.Background(), call(dir, "exec_command", map[string]any{"command_line": cmd}))
	}
	// A hook's deny holds over an allow rule.
	if res := run("ls", deny); !res.Blocked() || res.Action.Reason != "no ls today" || res.Permission != nil {
		t.Errorf("hook deny vs allow rule: %+v", res)
	}
	// A hook's allow does not skip an ask rule.
	res := run("git push", allow)
	if !res.NeedsPermission() || res.DecidedBy != "permissions" || res.Permission.Rule != "Bash(git push:*)" {
		t.Errorf("hook allow vs ask rule: %+v", res)
	}
	// An allow rule does not silence a hook's ask.
	res = run("ls", ask)
	if !res.NeedsPermission() || res.DecidedBy != ask.Name() || res.Permission.Decision != hooks.KindAllow {
		t.Errorf("allow rule vs hook ask: %+v", res)
	}
	// Under dontAsk a hook's ask is refused, as Claude Code turns a
	// dontAsk session's prompts into denials, even where an allow rule
	// matches; it waited for a person nobody was meant to ask.
	dontAsk := call(dir, "exec_command", map[string]any{"command_line": "ls"})
	dontAsk.PermissionMode = "dontAsk"
	r0 := hooks.NewRegistry()
	r0.Add(ask)
	r0.SetPermissionPolicy(NewPermissions(sources))
	if res := r0.RunPreToolUse(context.Background(), dontAsk); !res.Blocked() || res.NeedsPermission() || !strings.Contains(res.Action.Reason, "dontAsk") {
		t.Errorf("hook ask under dontAsk: %+v", res)
	}
	r0.SetPermissionPolicy(SessionModes())
	if res := r0.RunPreToolUse(context.Background(), dontAsk); !res.Blocked() || res.NeedsPermission() {
		t.Errorf("hook ask under a session's dontAsk with no settings: %+v", res)
	}
	// An explicit allow is recorded as allow with its hook, the rule next
	// to it.
	res = run("ls", allow)
	if res.Blocked() || res.NeedsPermission() || res.DecidedBy != allow.Name() || len(res.Decisions) != 2 ||
		res.Decisions[0].Kind != hooks.KindAllow || res.Decisions[0].Reason != "trusted" ||
		res.Decisions[1].Hook != "permissions" || res.Decisions[1].Kind != hooks.KindAllow {
		t.Errorf("hook allow + allow rule: %+v", res)
	}
	// A hook whose matcher does not select the call is not listed.
	res = run("ls", newCommandHook(t, cmdHook{Matcher: "Read", Command: "true", Dialect: DialectClaude}))
	if len(res.Decisions) != 1 || res.Decisions[0].Hook != "permissions" {
		t.Errorf("unmatched hook listed: %+v", res.Decisions)
	}
	// The workspace_read of .env is denied by the rule whatever the hooks.
	r := hooks.NewRegistry()
	r.SetPermissionPolicy(NewPermissions(sources))
	res = r.RunPreToolUse(context.Background(), call(dir, "workspace_read", map[string]any{"path": ".env"}))
	if !res.Blocked() || res.DecidedBy != "permissions" || !strings.Contains(res.Action.Reason, `"Read(./.env)"`) {
		t.Errorf("deny rule: %+v", res)
	}
}

func TestPermissionsInTheFingerprint(t *testing.T) {
	fp := func(body string) string {
		dir := t.TempDir()
		sources := project(t, dir, map[string]string{"settings.json": body})
		r := hooks.NewRegistry()
		for _, s := range sources {
			r.AddSource(s.Registered())
		}
		if p := NewPermissions(sources); p != nil {
			r.SetPermissionPolicy(p)
		}
		return r.PolicyFingerprint(nil)
	}
	a, b := fp(briefSettings), fp(strings.Replace(briefSettings, "ls:*", "cat:*", 1))
	if a == b || a != fp(briefSettings) {
		t.Errorf("fingerprints %s, %s: must differ with the rules and be stable", a, b)
	}
}

func TestPermissionsLoadErrorsAndWarnings(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{
		`{"permissions": {"deny": "Read(./.env)"}}`,
		`{"permissions": {"deny": ["Read(./.env"]}}`,
		`{"permissions": {"allow": ["Bash(git push) now"]}}`,
		`{"permissions": ["Read"]}`,
	} {
		path := filepath.Join(dir, "settings.json")
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSource(path, LoadOptions{}); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want an error naming the file", bad, err)
		}
	}
	src := project(t, t.TempDir(), map[string]string{"settings.json": `{
		"permissions": {"allow": ["NotebookEdit", "WebSearch(cats)"], "defaultMode": "yolo", "additionalDirectories": ["../other"], "denyRead": []},
		"statusLine": {"type": "command"}, "enabledPlugins": {}, "automaticCodeReview": true, "madeUp": 1, "$schema": "x",
		"hooks": {"Setup": [{"hooks": []}, {"hooks": []}], "PreToolUse": []}}`})[0]
	joined := strings.Join(src.Warnings, "\n")
	for _, want := range []string{`"NotebookEdit"`, `WebSearch(cats)`, `"yolo"`, "additionalDirectories", `permissions.denyRead`,
		`"statusLine"`, `"enabledPlugins"`, `"automaticCodeReview"`, `"madeUp"`} {
		if strings.Count(joined, want) != 1 {
			t.Errorf("warnings must name %s once:\n%s", want, joined)
		}
	}
	if strings.Count(joined, `"Setup"`) != 1 || strings.Contains(joined, "$schema") || strings.Contains(joined, `"permissions"`) {
		t.Errorf("warnings:\n%s", joined)
	}
	for _, w := range src.Warnings {
		if !strings.Contains(w, src.Path) {
			t.Errorf("warning %q does not name the file", w)
		}
	}
}

// The rules add microseconds to a call, against milliseconds for a
// command hook.
func BenchmarkPermissionsEvaluate(b *testing.B) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(briefSettings), 0o644); err != nil {
		b.Fatal(err)
	}
	sources, err := LoadSources([]string{dir}, LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	p := NewPermissions(sources)
	ev := call(dir, "exec_command", map[string]any{"command_line": "ls -la && git status"})
	for b.Loop() {
		p.Evaluate(ev, false)
	}
}

// Hooks see the mode the settings start a session in, as Claude Code's
// do, unless the session names another.
func TestHooksSeeTheSettingsPermissionMode(t *testing.T) {
	eval := &fakeEvaluator{answer: func(string) (string, error) { return `{"ok": true}`, nil }}
	dir := t.TempDir()
	path := writeFileAt(t, filepath.Join(dir, ".claude", "settings.json"), `{"permissions": {"defaultMode": "plan"},
	  "hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "Check $ARGUMENTS"}]}]}}`)
	src, err := LoadSource(path, LoadOptions{Prompt: eval})
	if err != nil {
		t.Fatal(err)
	}
	UseSettingsMode([]*Source{src}, NewPermissions([]*Source{src}).Mode())
	r := hooks.NewRegistry()
	r.AddSource(src.Registered())
	for _, tc := range []struct{ session, want string }{{"", "plan"}, {"default", "plan"}, {"acceptEdits", "acceptEdits"}} {
		s := hooks.Session{SessionID: "s", WorkspaceRoot: dir, PermissionMode: tc.session}
		r.RunPreToolUse(context.Background(), hooks.PreToolUseEvent{Session: s, ToolName: "calculator", CallID: "c", ToolInput: map[string]any{"expression": "1"}})
		var event map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(eval.prompts[len(eval.prompts)-1], "Check ")), &event); err != nil || event["permission_mode"] != tc.want {
			t.Errorf("session mode %q: permission_mode = %v (%v), want %s", tc.session, event["permission_mode"], err, tc.want)
		}
	}
}

// Under dontAsk with an allow list, a command line that sets a variable
// able to change what runs (PATH, LD_PRELOAD, GIT_EXTERNAL_DIFF, …) before
// an allowed command, on the command itself, on its own, with export, or
// through the call's env argument, is approved by no allow rule, as in
// Claude Code; the variables Claude Code lets allow rules look past
// (NODE_ENV, TZ, …) still pass. Deny rules see the command behind any
// assignment. So is a line that writes its output to a file (an allowed
// ls is not a file write); /dev/null and 2>&1 write none.
func TestAllowRulesDoNotLookPastVariablesThatChangeWhatRuns(t *testing.T) {
	dir := t.TempDir()
	p := NewPermissions(project(t, dir, map[string]string{"settings.json": `{"permissions": {"defaultMode": "dontAsk",
		"allow": ["Bash(ls:*)", "Bash(git log:*)", "Bash(npm test)"], "deny": ["Bash(rm:*)"]}}`}))
	for _, tc := range []struct {
		command string
		env     map[string]any
		want    hooks.Kind
		why     string
	}{
		{command: "ls -la", want: hooks.KindAllow},
		{command: "NODE_ENV=test npm test", want: hooks.KindAllow},
		{command: "TZ=UTC LANG=C git log -1", want: hooks.KindAllow},
		{command: "export NODE_ENV=test && npm test", want: hooks.KindAllow},
		{command: "git log -1", env: map[string]any{"NO_COLOR": "1"}, want: hooks.KindAllow},
		{command: "LD_PRELOAD=./evil.so ls", want: hooks.KindDeny, why: "it sets LD_PRELOAD"},
		{command: "PATH=./bin git log", want: hooks.KindDeny, why: "it sets PATH"},
		{command: "PATH=./bin; git log", want: hooks.KindDeny, why: "it sets PATH"},
		{command: "export PATH=./bin && git log", want: hooks.KindDeny, why: "it sets PATH"},
		{command: "readonly GIT_EXTERNAL_DIFF=./diff.sh; git log --ext-diff -p", want: hooks.KindDeny, why: "it sets GIT_EXTERNAL_DIFF"},
		{command: "NODE_OPTIONS='--require ./x.js' npm test", want: hooks.KindDeny, why: "it sets NODE_OPTIONS"},
		{command: "git log --ext-diff -p", env: map[string]any{"GIT_EXTERNAL_DIFF": "./diff.sh"}, want: hooks.KindDeny, why: "it sets GIT_EXTERNAL_DIFF"},
		{command: "npm test", env: map[string]any{"NODE_ENV": "test", "BASH_ENV": "./rc"}, want: hooks.KindDeny, why: "it sets BASH_ENV"},
		{command: "LD_PRELOAD=./evil.so rm -rf build", want: hooks.KindDeny, why: `rule "Bash(rm:*)"`},
		{command: "ls 2>/dev/null", want: hooks.KindAllow},
		{command: "ls >/dev/null 2>&1", want: hooks.KindAllow},
		{command: "git log -1 2>&1 >&2", want: hooks.KindAllow},
		{command: "ls >/dev/stderr", want: hooks.KindAllow},
		{command: "ls > listing.txt", want: hooks.KindDeny, why: "it writes its output to listing.txt"},
		{command: "git log -1 >> ~/.bashrc", want: hooks.KindDeny, why: "it writes its output to ~/.bashrc"},
		// dash, which runs the line, reads &> as & and >: ls in the
		// background, then a redirection.
		{command: `ls &> "build log"`, want: hooks.KindDeny, why: "`&>` redirects are a bash/mksh/zsh feature"},
		{command: "ls && npm test >& out", want: hooks.KindDeny, why: "it writes its output to out"},
	} {
		args := map[string]any{"command_line": tc.command}
		if tc.env != nil {
			args["env"] = tc.env
		}
		v := p.Evaluate(call(dir, "exec_command", args), false)
		if v.Decision != tc.want || !strings.Contains(v.Reason, tc.why) {
			t.Errorf("%q env %v = %s (%s), want %s saying %q", tc.command, tc.env, v.Decision, v.Reason, tc.want, tc.why)
		}
	}
}

// A Claude Code user's auto-approve hook, which allows "ls" by its command
// text, is shown the env argument as the assignments before the command
// (LD_PRELOAD=./evil.so ls), so it does not approve a call it would not
// approve written out; under dontAsk the call is then refused.
func TestAutoApproveHookSeesTheEnvArgument(t *testing.T) {
	dir := t.TempDir()
	approve := writeScript(t, dir, "approve-ls.sh", `cmd=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"]["command"])')
case "$cmd" in
  make|"make "*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"make is fine"}}' ;;
esac`)
	sources := project(t, dir, map[string]string{"settings.json": `{"permissions": {"defaultMode": "dontAsk"},
		"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "` + approve + `"}]}]}}`})
	r := hooks.NewRegistry()
	for _, src := range sources {
		r.AddSource(src.Registered())
	}
	r.SetPermissionPolicy(NewPermissions(sources))
	for _, tc := range []struct {
		env  map[string]any
		want hooks.Kind
	}{
		{nil, hooks.KindContinue},
		{map[string]any{"NODE_ENV": "test"}, hooks.KindBlock},
		{map[string]any{"LD_PRELOAD": "./evil.so"}, hooks.KindBlock},
	} {
		args := map[string]any{"command_line": "make"}
		if tc.env != nil {
			args["env"] = tc.env
		}
		res := r.RunPreToolUse(context.Background(), call(dir, "exec_command", args))
		if res.Action.Kind != tc.want && !(tc.want == hooks.KindContinue && res.Action.Kind == hooks.KindMutateInput) {
			t.Errorf("make with env %v: %s (%s), want %s", tc.env, res.Action.Kind, res.Action.Reason, tc.want)
		}
	}
}

// With the sandbox on and autoAllowBashIfSandboxed (Claude Code's
// default), dontAsk approves Bash's counterparts without an allow rule,
// while the host applies the sandbox; deny and ask rules still decide
// first, other tools still need a rule, and a sandbox that could not be
// applied, or autoAllowBashIfSandboxed: false, approves nothing.
func TestSandboxAutoAllowsBashUnderDontAsk(t *testing.T) {
	dir := t.TempDir()
	settings := filepath.Join(dir, ".claude", "settings.json")
	p := NewPermissions(project(t, dir, map[string]string{
		"settings.json": `{"permissions": {"defaultMode": "dontAsk", "deny": ["Bash(rm:*)"], "ask": ["Bash(git push:*)"]}, "sandbox": {"enabled": true}}`,
	}))
	sandboxed := true
	p.UseSandbox(func() bool { return sandboxed })
	for _, tc := range []struct {
		tool, line string
		want       hooks.Kind
		rule       string
	}{
		{"exec_command", "make test", hooks.KindAllow, "sandbox.autoAllowBashIfSandboxed"},
		{"process_exec", "npm run dev", hooks.KindAllow, "sandbox.autoAllowBashIfSandboxed"},
		{"exec_command", "rm -rf build", hooks.KindDeny, "Bash(rm:*)"},
		// dontAsk denies what an ask rule would ask.
		{"exec_command", "git push origin main", hooks.KindDeny, "Bash(git push:*)"},
	} {
		v := p.Evaluate(call(dir, tc.tool, map[string]any{"command_line": tc.line}), false)
		if v.Decision != tc.want || v.Rule != tc.rule {
			t.Errorf("%s %q: %+v, want %s by %s", tc.tool, tc.line, v, tc.want, tc.rule)
		}
	}
	v := p.Evaluate(call(dir, "exec_command", map[string]any{"command_line": "make test"}), false)
	if v.Source != settings || !strings.Contains(v.Reason, "autoAllowBashIfSandboxed approves it under dontAsk") {
		t.Errorf("the approval does not say where it comes from: %+v", v)
	}
	if v := p.Evaluate(call(dir, "workspace_write", map[string]any{"path": "a.txt"}), false); v.Decision != hooks.KindDeny {
		t.Errorf("a file write is no sandboxed command: %+v, want denied", v)
	}
	sandboxed = false
	if v := p.Evaluate(call(dir, "exec_command", map[string]any{"command_line": "make test"}), false); v.Decision != hooks.KindDeny || v.Rule != "defaultMode dontAsk" {
		t.Errorf("a sandbox that could not be applied approved: %+v", v)
	}

	off := NewPermissions(project(t, t.TempDir(), map[string]string{
		"settings.json": `{"permissions": {"defaultMode": "dontAsk"}, "sandbox": {"enabled": true, "autoAllowBashIfSandboxed": false}}`,
	}))
	off.UseSandbox(func() bool { return true })
	if v := off.Evaluate(call(dir, "exec_command", map[string]any{"command_line": "make test"}), false); v.Decision != hooks.KindDeny {
		t.Errorf("autoAllowBashIfSandboxed false: %+v, want denied", v)
	}
}

// A workspace root and a settings file's project are often the same
// directory under two names (/home/me/app a link to /srv/app, the kernel
// naming one and the worker's -hooks-file the other). Rules anchored at
// the project ("/secrets") or at an absolute path ("//srv/app/priv") must
// hold whichever name each side uses: they used to compare the names
// only, so a workspace reached through the link read the denied files.
func TestPathRulesHoldThroughASymlinkedWorkspaceRoot(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "srv", "app")
	for _, d := range []string{"secrets", "priv", "src"} {
		if err := os.MkdirAll(filepath.Join(real, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "home-app")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	rules := `{"permissions": {"deny": ["Read(/secrets/**)", "Edit(/secrets/**)", "Read(//` + strings.TrimPrefix(filepath.ToSlash(real), "/") + `/priv/**)"]}}`
	for _, loadedAt := range []string{real, link} {
		project(t, real, map[string]string{"settings.json": rules})
		sources, err := LoadSources([]string{loadedAt}, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := NewPermissions(sources)
		for _, root := range []string{real, link} {
			for _, tc := range []struct {
				tool, path string
				denied     bool
			}{
				{"workspace_read", "secrets/key.pem", true},
				{"workspace_write", "secrets/key.pem", true},
				{"workspace_read", "priv/id_rsa", true},
				{"workspace_read", "src/main.go", false},
			} {
				v := p.Evaluate(call(root, tc.tool, map[string]any{"path": tc.path}), false)
				if got := v.Decision == hooks.KindDeny; got != tc.denied {
					t.Errorf("project loaded at %s, workspace %s: %s %s = %+v, want denied %v", loadedAt, root, tc.tool, tc.path, v, tc.denied)
				}
				if tc.tool == "workspace_read" && p.ReadDenied(root, tc.path, nil) != tc.denied {
					t.Errorf("project loaded at %s, workspace %s: ReadDenied(%s) = %v, want %v", loadedAt, root, tc.path, !tc.denied, tc.denied)
				}
			}
		}
	}
}

// exec_command's cwd argument is the "cd" a Claude Code agent would write
// before its command: "./scripts/test.sh" run in evil/ is the agent's own
// evil/scripts/test.sh, and "npm test" there runs evil/package.json's
// script. An allow rule naming the command used to approve it in any
// working directory, where "cd evil && ./scripts/test.sh" was refused
// under dontAsk; the cd must now be approved too.
func TestAllowRulesApproveTheCallsWorkingDirectoryToo(t *testing.T) {
	dir := t.TempDir()
	p := NewPermissions(project(t, dir, map[string]string{"settings.json": `{"permissions": {"defaultMode": "dontAsk",
		"allow": ["Bash(./scripts/test.sh)", "Bash(npm test)"]}}`}))
	for _, tc := range []struct {
		args map[string]any
		want hooks.Kind
	}{
		{map[string]any{"command_line": "./scripts/test.sh"}, hooks.KindAllow},
		{map[string]any{"command_line": "./scripts/test.sh", "cwd": "."}, hooks.KindAllow},
		{map[string]any{"command_line": "./scripts/test.sh", "cwd": "evil"}, hooks.KindDeny},
		{map[string]any{"command_line": "npm test", "cwd": "evil/"}, hooks.KindDeny},
		{map[string]any{"command_line": "cd evil && ./scripts/test.sh"}, hooks.KindDeny},
	} {
		v := p.Evaluate(call(dir, "exec_command", tc.args), false)
		if v.Decision != tc.want {
			t.Errorf("%v = %+v, want %q", tc.args, v, tc.want)
		}
		if tc.want == hooks.KindDeny && tc.args["cwd"] != nil && !strings.Contains(v.Reason, `"cd evil"`) {
			t.Errorf("%v: reason %q does not name the cd no rule approves", tc.args, v.Reason)
		}
		if v := p.Evaluate(call(dir, "process_exec", tc.args), false); v.Decision != tc.want {
			t.Errorf("process_exec %v = %+v, want %q", tc.args, v, tc.want)
		}
	}
	// A rule that approves the cd approves the call there.
	q := NewPermissions(project(t, t.TempDir(), map[string]string{"settings.json": `{"permissions": {"defaultMode": "dontAsk",
		"allow": ["Bash(npm test)", "Bash(cd web)"]}}`}))
	if v := q.Evaluate(call(dir, "exec_command", map[string]any{"command_line": "npm test", "cwd": "web"}), false); v.Decision != hooks.KindAllow || !strings.Contains(v.Rule, "Bash(cd web)") {
		t.Errorf("npm test in web with Bash(cd web) allowed = %+v, want allowed by both rules", v)
	}
}
