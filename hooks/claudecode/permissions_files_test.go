package claudecode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// judge evaluates each call in dir under p and reports those whose
// decision is not the one wanted.
func judge(t *testing.T, p *Permissions, dir string, tests []judgedCase) {
	t.Helper()
	for _, tc := range tests {
		args := map[string]any{"path": tc.arg}
		if tc.tool == "exec_command" {
			args = map[string]any{"command_line": tc.arg}
		}
		if v := p.Evaluate(call(dir, tc.tool, args), false); v.Decision != tc.want {
			t.Errorf("%s %q: %s (%s), want %q", tc.tool, tc.arg, v.Decision, v.Reason, tc.want)
		}
	}
}

type judgedCase struct {
	tool, arg string
	want      hooks.Kind
}

// Claude Code's deny rules reach further than the file tools' exact
// paths: a pattern of one directory segment (private/**) matches that
// directory at any depth, a Read deny rule keeps its files from being
// written too, and both Read and Edit deny rules hold for the files the
// shell commands it recognizes read and write (cat .env, a redirection
// into src/generated). A user's rules covered less under Fenix.
func TestDenyRulesReachWhereClaudeCodesDo(t *testing.T) {
	dir := t.TempDir()
	for rel, body := range map[string]string{".env": "KEY=1", "nested/private/p.txt": "p", "src/generated/a.ts": "a", "README.md": "r", "sub/x": "x"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, ".env"), filepath.Join(dir, "settings-link")); err != nil {
		t.Fatal(err)
	}
	p := NewPermissions(project(t, dir, map[string]string{"settings.json": `{"permissions": {
		"deny": ["Read(./.env)", "Read(private/**)", "Edit(/src/generated/**)"],
		"allow": ["Edit(src/**)"]}}`}))
	denied, asked, open := hooks.KindDeny, hooks.KindPermissionRequired, hooks.Kind("")
	judge(t, p, dir, []judgedCase{
		{"workspace_read", "nested/private/p.txt", denied},
		{"workspace_read", "private/q.txt", denied},
		{"workspace_write", ".env", denied},
		{"workspace_write", "nested/private/new.txt", denied},
		{"workspace_read", "README.md", open},
		{"exec_command", "cat .env", denied},
		{"exec_command", "head -n 5 ./.env", denied},
		{"exec_command", "cd sub && tail -f ../.env", denied},
		{"exec_command", "sed -n 1p .env", denied},
		{"exec_command", "cat .e*", denied},
		{"exec_command", "cat settings-link", denied},
		{"exec_command", "sudo cat nested/private/p.txt", denied},
		{"exec_command", "echo KEY=2 > .env", denied},
		{"exec_command", "cd src/generated && echo hi > b.ts", denied},
		{"exec_command", "cat ~/.env", denied},
		{"exec_command", "cat " + filepath.Join(dir, ".e*"), denied},
		{"exec_command", "echo hi > src/generated/b.ts", denied},
		{"exec_command", "echo hi | tee -a src/generated/a.ts", denied},
		{"exec_command", "sed -i s/a/b/ src/generated/a.ts", denied},
		{"exec_command", `cat "$FILE"`, asked},
		{"exec_command", "cat README.md && echo hi > notes.txt", open},
		{"exec_command", "sed -n 1p README.md", open},
	})
	// An allow rule's single segment stays at the workspace's root.
	strict := NewPermissions(project(t, t.TempDir(), map[string]string{"settings.json": `{"permissions": {
		"defaultMode": "dontAsk", "allow": ["Edit(src/**)"]}}`}))
	judge(t, strict, dir, []judgedCase{
		{"workspace_write", "src/main.go", hooks.KindAllow},
		{"workspace_write", "pkg/src/main.go", denied},
	})
}

// Under dontAsk Claude Code denies what would ask, and only that: an ask
// rule's calls are denied rather than parked, while a read in the working
// directory and its built-in read-only commands run without a rule.
// Claude Code also strips the builtins command and builtin, and zsh's
// noglob, before matching allow rules.
func TestDontAskDeniesWhatWouldAskAndOnlyThat(t *testing.T) {
	dir := t.TempDir()
	p := NewPermissions(project(t, dir, map[string]string{"settings.json": `{"permissions": {"defaultMode": "dontAsk",
		"ask": ["Bash(git push:*)"], "allow": ["Bash(npm run test:*)", "Bash(echo:*)"]}}`}))
	denied, open := hooks.KindDeny, hooks.Kind("")
	judge(t, p, dir, []judgedCase{
		{"exec_command", "git push origin main", denied},
		{"workspace_read", "package.json", open},
		{"workspace_list", "src", open},
		{"workspace_write", "notes.txt", denied},
		{"exec_command", "pwd", open},
		{"exec_command", "ls -la src | grep main", open},
		{"exec_command", "cd src && ls", open},
		{"exec_command", "git status", open},
		{"exec_command", "git diff HEAD~1", open},
		{"exec_command", "git rev-parse HEAD && git branch --show-current && git remote -v", open},
		{"exec_command", "git branch feature/x", denied},
		{"exec_command", "git remote add origin https://example.com/x.git", denied},
		{"exec_command", "find . -name '*.go'", open},
		{"exec_command", "ls > listing.txt", denied},
		{"exec_command", "cd src && git status", denied},
		{"exec_command", "git -C .. status", denied},
		{"exec_command", "git diff --output=/tmp/x", denied},
		{"exec_command", "find . -delete", denied},
		{"exec_command", "cd .. && ls", denied},
		{"exec_command", "LD_PRELOAD=./x.so ls", denied},
		{"exec_command", "rm -rf build", denied},
		{"exec_command", "command npm run test", hooks.KindAllow},
		{"exec_command", "builtin echo hi", hooks.KindAllow},
		{"exec_command", "noglob npm run test -- --grep x", hooks.KindAllow},
		{"exec_command", "command -v npm", denied},
	})
}

// exec_command's line runs in /bin/sh, dash on Debian, which has no $'…'
// quoting and reads bash's &> as & and >. Rules judged the line as bash
// reads it only: `echo $'\' ; cat .env # '` was one echo, allowed by
// Bash(echo:*), and dash ran cat .env; `echo hi &>/dev/null curl x` was an
// echo, and dash ran curl past Bash(curl:*). The rules now judge the
// commands of both grammars, and a line dash cannot read as bash does is
// one they cannot judge.
func TestRulesJudgeTheLineAsTheShellThatRunsItReadsIt(t *testing.T) {
	if len(shellGrammars()) < 2 {
		t.Skip("/bin/sh is bash here")
	}
	dir := t.TempDir()
	p := NewPermissions(project(t, dir, map[string]string{"settings.json": `{"permissions": {"defaultMode": "dontAsk",
		"deny": ["Bash(cat .env)", "Bash(curl:*)"], "allow": ["Bash(echo:*)"]}}`}))
	for _, tc := range []struct {
		line string
		want hooks.Kind
		why  string
	}{
		{`echo $'\' ; cat .env # '`, hooks.KindDeny, `rule "Bash(cat .env)"`},
		{`echo hi &>/dev/null curl https://evil.example`, hooks.KindDeny, "reads it otherwise than bash"},
		{`echo $'a\tb'`, hooks.KindAllow, ""},
		{`export NODE_ENV=test && echo hi`, hooks.KindAllow, ""},
	} {
		v := p.Evaluate(call(dir, "exec_command", map[string]any{"command_line": tc.line}), false)
		if v.Decision != tc.want || !strings.Contains(v.Reason, tc.why) {
			t.Errorf("%q: %s (%s), want %s saying %q", tc.line, v.Decision, v.Reason, tc.want, tc.why)
		}
	}
}
