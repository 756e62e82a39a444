package claudecode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// Bash rules judge the words the shell runs, not the text as written:
// quoting, escapes, brace expansion, wrappers and program paths do not
// get a command past a deny rule, and never earn it an allow.
func TestBashRulesJudgeTheWordsTheShellRuns(t *testing.T) {
	dir := t.TempDir()
	p := NewPermissions(project(t, dir, map[string]string{"settings.json": `{"permissions": {
		"deny": ["Bash(rm *)", "Bash(git push *)"],
		"allow": ["Bash(ls *)", "Bash(npm test *)", "Bash(echo *)", "Bash(git commit -m *)"]}}`}))
	const denyRm, denyPush, ask = "Bash(rm *)", "Bash(git push *)", "ask"
	tests := []struct {
		cmd  string
		want string // a deny rule, "ask", an allow rule, or "" for no verdict
	}{
		// Quote removal and escapes.
		{`r''m -rf x`, denyRm},
		{`"rm" -rf x`, denyRm},
		{`\rm -rf x`, denyRm},
		{`$'rm' -rf x`, denyRm},
		{`$'\x72m' -rf x`, denyRm},
		{`git "push" origin main`, denyPush},
		{`git pu''sh --force`, denyPush},
		// Brace expansion: bash runs rm.
		{`{rm,-rf,x}`, denyRm},
		{`{rm,x} -rf`, denyRm},
		// A program path names its program for a deny rule.
		{`/bin/rm -rf x`, denyRm},
		{`~/bin/rm -rf x`, denyRm},
		{`$DIR/rm -rf x`, denyRm},
		// Claude Code's process wrappers, and other commands that run
		// their arguments.
		{`timeout 5 rm -rf x`, denyRm},
		{`timeout -s KILL 5 rm -rf x`, denyRm},
		{`time rm -rf x`, denyRm},
		{`/usr/bin/time -f %e rm -rf x`, denyRm},
		{`nice -n 5 rm -rf x`, denyRm},
		{`nohup rm -rf x`, denyRm},
		{`stdbuf -oL rm -rf x`, denyRm},
		{`xargs rm -rf`, denyRm},
		{`xargs -0 -n 1 rm -rf`, denyRm},
		{`env FOO=1 rm -rf x`, denyRm},
		{`env -u HOME -- rm -rf x`, denyRm},
		{`sudo -u root rm -rf x`, denyRm},
		{`/usr/bin/sudo rm -rf x`, denyRm},
		{`exec rm -rf x`, denyRm},
		{`command rm -rf x`, denyRm},
		{`sudo env X=1 nice timeout 9 git push origin`, denyPush},
		{`sh -c 'rm -rf x'`, denyRm},
		{`bash -ec "ls; rm -rf x"`, denyRm},
		{`eval "rm -rf x"`, denyRm},
		{`env -S 'rm -rf x'`, denyRm},
		{`bash -o pipefail -c 'rm -rf x'`, denyRm},
		{`sh -c "sh -c 'rm -rf x'"`, denyRm},
		{`time -p rm -rf x`, denyRm},
		{`f() { rm -rf "$1"; }; f x`, denyRm},
		// find runs the command of each -exec, -execdir, -ok, -okdir.
		{`find . -name '*.tmp' -exec rm -rf {} \;`, denyRm},
		{`find . -type f -execdir rm {} +`, denyRm},
		{`find . -ok ls {} ';' -exec sudo rm -f {} ';'`, denyRm},
		{`find . -exec sh -c 'git push origin' \;`, denyPush},
		{`find . -name rm`, ""},
		// A glob program may be rm.
		{`r? -rf x`, denyRm},
		{`/bin/r* -rf x`, denyRm},
		// A dynamic program cannot be judged: asked about, never allowed.
		{`$TOOL -rf x`, ask},
		{`sudo $TOOL -rf x`, ask},
		{`sh -c "$SCRIPT"`, ask},
		// Words that only look like rm are not rm.
		{`echo rm -rf x`, "Bash(echo *)"},
		{`sudo -u rm ls`, ""},
		{`bash ./rm.sh`, ""},
		{`ls rm`, "Bash(ls *)"},
		// Allow rules: Claude Code's wrappers are stripped, others are not.
		{`ls -la`, "Bash(ls *)"},
		{`timeout 30 npm test`, "Bash(npm test *)"},
		{`nice -n 5 ls`, "Bash(ls *)"},
		{`nohup npm test -- --watch`, "Bash(npm test *)"},
		{`xargs ls`, "Bash(ls *)"},
		{`xargs -n1 ls`, ""},
		{`sudo ls`, ""},
		{`env X=1 ls`, ""},
		{`/bin/ls`, ""},
		// Allow rules match the words as written: quoting is not
		// removed, so it neither earns nor spoils an allow.
		{`git commit -m "fix the bug"`, "Bash(git commit -m *)"},
		{`l''s -la`, ""},
		// Brace and glob expansion never produce an allow.
		{`{ls,-la}`, ""},
		{`ls *.go`, ""},
		{`echo {a,b}`, ""},
	}
	for _, tc := range tests {
		v := p.Evaluate(call(dir, "exec_command", map[string]any{"command_line": tc.cmd}), false)
		got := v.Rule
		switch v.Decision {
		case hooks.KindPermissionRequired:
			got = ask
		case "":
			got = ""
		}
		if got != tc.want {
			t.Errorf("%s: %+v, want %q", tc.cmd, v, tc.want)
		}
	}
}

// Read and Edit rules follow the gitignore specification: a rule naming
// a directory covers everything beneath it, a pattern with a slash (other
// than a trailing one) is anchored, and one without matches at any depth.
func TestPathRulesFollowGitignore(t *testing.T) {
	dir := t.TempDir()
	p := NewPermissions(project(t, dir, map[string]string{"settings.json": `{"permissions": {
		"deny": ["Read(./secrets)", "Read(vault)", "Edit(/config)", "Read(src/gen)", "Read(build/)", "Read(/` + dir + `/abs)",
			"Read(./.env)", "Read(keys/*)"],
		"allow": ["Read(./docs)"]}}`}))
	tests := []struct {
		tool, path string
		want       string
	}{
		{"workspace_read", "secrets", "Read(./secrets)"},
		{"workspace_read", "secrets/key.pem", "Read(./secrets)"},
		{"workspace_read", "secrets/deep/er/key.pem", "Read(./secrets)"},
		{"workspace_list", "secrets/deep", "Read(./secrets)"},
		{"workspace_search", "secrets", "Read(./secrets)"},
		{"workspace_read", dir + "/secrets/key.pem", "Read(./secrets)"},
		{"workspace_read", "src/../secrets/key.pem", "Read(./secrets)"},
		{"workspace_read", "secretsX/key.pem", ""},
		{"workspace_read", "other/secrets/key.pem", ""}, // ./ anchors
		{"workspace_read", "vault/k", "Read(vault)"},
		{"workspace_read", "a/b/vault/k", "Read(vault)"}, // no slash: any depth
		{"workspace_edit", "config/app.yaml", "Edit(/config)"},
		{"workspace_write", "config/a/b.yaml", "Edit(/config)"},
		{"workspace_read", "src/gen/x.go", "Read(src/gen)"},
		{"workspace_read", "lib/src/gen/x.go", ""}, // a middle slash anchors
		{"workspace_read", "build/out/a.o", "Read(build/)"},
		{"workspace_read", "abs/x", "Read(/" + dir + "/abs)"},
		{"workspace_read", ".env", "Read(./.env)"},
		{"workspace_read", "config/.env", ""},
		{"workspace_read", "keys/sub/id_rsa", "Read(keys/*)"},
		{"workspace_read", "docs/guide/a.md", "Read(./docs)"},
		{"workspace_read", "docsX/a.md", ""},
	}
	for _, tc := range tests {
		v := p.Evaluate(call(dir, tc.tool, map[string]any{"path": tc.path}), false)
		if v.Rule != tc.want {
			t.Errorf("%s %s: %+v, want %q", tc.tool, tc.path, v, tc.want)
		}
	}
}

// A path rule judges a symlink and the file it resolves to inside the
// workspace: a deny matching either denies, an allow must hold for both,
// and a path Fenix cannot resolve may lead anywhere.
func TestPathRulesFollowSymlinks(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"secrets", "private", "docs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"link": "secrets", "envlink": ".env", "docs/leak": "../private", "docs/chain": "../link",
		"loop": "loop", "abs": "/etc", "up": "..",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	sources := project(t, dir, map[string]string{"settings.json": `{"permissions": {
		"deny": ["Read(./secrets)", "Read(./.env)", "Edit(./secrets)"],
		"allow": ["Read(./docs)", "Read(./private)"]}}`})
	p := NewPermissions(sources)
	tests := []struct {
		tool, path string
		want       hooks.Kind
		rule       string
	}{
		{"workspace_read", "link/key.pem", hooks.KindDeny, "Read(./secrets)"},
		{"workspace_list", "link", hooks.KindDeny, "Read(./secrets)"},
		{"workspace_search", "link", hooks.KindDeny, "Read(./secrets)"},
		{"workspace_read", "envlink", hooks.KindDeny, "Read(./.env)"},
		// A Read deny rule keeps a file from being written too.
		{"workspace_write", "link/new.pem", hooks.KindDeny, "Read(./secrets)"},
		{"workspace_read", "docs/chain/key.pem", hooks.KindDeny, "Read(./secrets)"},
		{"workspace_read", "docs/leak/notes.txt", hooks.KindAllow, "Read(./docs), Read(./private)"},
		{"workspace_read", "docs/guide.md", hooks.KindAllow, "Read(./docs)"},
		// Unresolvable: a loop, an absolute target, a way out.
		{"workspace_read", "loop/x", hooks.KindPermissionRequired, "Read(./secrets)"},
		{"workspace_read", "abs/passwd", hooks.KindPermissionRequired, "Read(./secrets)"},
		{"workspace_read", "up/x", hooks.KindPermissionRequired, "Read(./secrets)"},
	}
	for _, tc := range tests {
		v := p.Evaluate(call(dir, tc.tool, map[string]any{"path": tc.path}), false)
		if v.Decision != tc.want || v.Rule != tc.rule {
			t.Errorf("%s %s: %+v, want %q by %q", tc.tool, tc.path, v, tc.want, tc.rule)
		}
	}
	// An allow rule must hold for the target too: under dontAsk, a write
	// through a link out of an allowed directory is refused (a read in the
	// workspace needs no rule there).
	strict := NewPermissions(project(t, t.TempDir(), map[string]string{"settings.json": `{"permissions": {
		"defaultMode": "dontAsk", "allow": ["Edit(./docs)"]}}`}))
	if v := strict.Evaluate(call(dir, "workspace_write", map[string]any{"path": "docs/leak/notes.txt"}), false); v.Decision != hooks.KindDeny {
		t.Errorf("dontAsk, a link out of an allowed directory: %+v, want deny", v)
	}
	if v := strict.Evaluate(call(dir, "workspace_write", map[string]any{"path": "docs/guide.md"}), false); v.Decision != hooks.KindAllow {
		t.Errorf("dontAsk, inside an allowed directory: %+v, want allow", v)
	}
}

// Plan mode refuses every tool not known to only read, whatever its name:
// Fenix tools Claude Code has no name for, and MCP tools without the
// server's readOnlyHint.
func TestPlanModeRefusesWhatIsNotReadOnly(t *testing.T) {
	dir := t.TempDir()
	p := NewPermissions(project(t, dir, map[string]string{"settings.json": `{"permissions": {"defaultMode": "plan", "allow": ["mcp__github"]}}`}))
	tests := []struct {
		tool     string
		readOnly bool
		refused  bool
	}{
		{"process_stop", false, true},
		{"memory_write", false, true},
		{"browser_click", false, true},
		{"browser_type", false, true},
		{"process_exec", false, true},
		{"workspace_write", false, true},
		{"spawn_subagent", false, true},
		{"mcp__github__create_issue", false, true},
		{"some_future_tool", false, true},
		{"workspace_read", true, false},
		{"calculator", true, false},
		{"browser_snapshot", true, false},
		{"mcp__github__list_issues", true, false},
	}
	for _, tc := range tests {
		ev := call(dir, tc.tool, map[string]any{})
		ev.ReadOnly = tc.readOnly
		v := p.Evaluate(ev, false)
		if refused := v.Decision == hooks.KindDeny; refused != tc.refused || refused && v.Rule != "defaultMode plan" {
			t.Errorf("%s (read-only %v) in plan mode: %+v, want refused %v", tc.tool, tc.readOnly, v, tc.refused)
		}
	}
}

// MCP rules name a server (mcp__server, mcp__server__*), every server
// (mcp__*) or one tool; a tool whose own name holds "__" is still that
// server's.
func TestMCPRulesCoverEveryToolTheyName(t *testing.T) {
	tests := []struct {
		rule, tool string
		want       bool
	}{
		{"mcp__*", "mcp__github__create_issue", true},
		{"mcp__*", "mcp__a__b__c", true},
		{"mcp__*", "workspace_read", false},
		{"mcp__vault__*", "mcp__vault__read", true},
		{"mcp__vault__*", "mcp__vault__read__all", true},
		{"mcp__vault__*", "mcp__vaultx__read", false},
		{"mcp__vault", "mcp__vault__read__all", true},
		{"mcp__vault", "mcp__vaultx__read", false},
		{"mcp__vault__read", "mcp__vault__read", true},
		{"mcp__vault__read", "mcp__vault__read__all", false},
		{"mcp__vault__read__all", "mcp__vault__read__all", true},
		{"mcp__vault__read_*", "mcp__vault__read_secret", true},
		{"mcp__vault__read_*", "mcp__vault__write", false},
		{"mcp__git*", "mcp__gitlab__merge", true},
		{"mcp__git*", "mcp__vault__git", false},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		p := NewPermissions(project(t, dir, map[string]string{"settings.json": `{"permissions": {"deny": ["` + tc.rule + `"]}}`}))
		v := p.Evaluate(call(dir, tc.tool, map[string]any{}), false)
		if got := v.Decision == hooks.KindDeny; got != tc.want {
			t.Errorf("deny %s on %s: %+v, want denied %v", tc.rule, tc.tool, v, tc.want)
		}
	}
}

// WebFetch(domain:…) judges the host a request goes to, however the URL
// spells it: case, a trailing dot, userinfo, a port, percent-encoding and
// Unicode (IDNA) do not get past a deny rule.
func TestWebFetchDomainRulesJudgeTheHost(t *testing.T) {
	dir := t.TempDir()
	p := NewPermissions(project(t, dir, map[string]string{"settings.json": `{"permissions": {
		"deny": ["WebFetch(domain:example.com)", "WebFetch(domain:bücher.example)", "WebFetch(domain:*.EVIL.test.)"],
		"allow": ["WebFetch(domain:docs.fenix.test)"]}}`}))
	allowAll := NewPermissions(project(t, t.TempDir(), map[string]string{"settings.json": `{"permissions": {
		"allow": ["WebFetch(domain:docs.fenix.test)"]}}`}))
	for _, u := range []string{"https://exa mple.com/", "docs.fenix.test/x", "https:///docs.fenix.test"} {
		if v := allowAll.Evaluate(call(dir, "web_fetch", map[string]any{"url": u}), false); v.Decision != "" {
			t.Errorf("%s: %+v, want no allow for a URL without a readable host", u, v)
		}
	}
	// A specifier other than domain: approves nothing.
	odd := NewPermissions(project(t, t.TempDir(), map[string]string{"settings.json": `{"permissions": {
		"allow": ["WebFetch(https://docs.fenix.test/*)"]}}`}))
	if v := odd.Evaluate(call(dir, "web_fetch", map[string]any{"url": "https://evil.test/"}), false); v.Decision != "" {
		t.Errorf("allow WebFetch(https://…): %+v, want no verdict", v)
	}
	tests := []struct {
		url  string
		want hooks.Kind
	}{
		{"https://example.com/x", hooks.KindDeny},
		{"https://example.com./x", hooks.KindDeny},
		{"https://EXAMPLE.com/x", hooks.KindDeny},
		{"https://Example.COM.:443/x", hooks.KindDeny},
		{"https://a@example.com/x", hooks.KindDeny},
		{"https://a:b@example.com:8443/x", hooks.KindDeny},
		{"https://example%2ecom/x", hooks.KindDeny},
		{"https://xn--bcher-kva.example/", hooks.KindDeny},
		{"https://BÜCHER.example/", hooks.KindDeny},
		{"https://a.evil.test/", hooks.KindDeny},
		{"https://A.EVIL.TEST./", hooks.KindDeny},
		{"https://example.com@other.test/", ""}, // the host is other.test
		{"https://sub.example.com/", ""},        // domain: names that host only
		{"https://notexample.com/", ""},
		{"https://docs.fenix.test./guide", hooks.KindAllow},
		{"https://DOCS.fenix.test/guide", hooks.KindAllow},
		{"https://docs.fenix.test.evil/", ""},
		// A URL with no host Fenix can read falls under every deny rule
		// and no allow rule.
		{"https://exa mple.com/", hooks.KindDeny},
		{"example.com/x", hooks.KindDeny},
	}
	for _, tc := range tests {
		v := p.Evaluate(call(dir, "web_fetch", map[string]any{"url": tc.url}), false)
		if v.Decision != tc.want {
			t.Errorf("%s: %+v, want %q", tc.url, v, tc.want)
		}
	}
}
