package claudecode

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A hook that names python3 where python3 on PATH is a version manager's
// shell shim (pyenv's layout: ~/.pyenv/shims/python3, a bash script that
// execs pyenv) is loaded with a warning naming the shim; one that names
// the interpreter by its path, or a program that is no shim, is not.
func TestLoadWarnsAboutVersionManagerShims(t *testing.T) {
	home := t.TempDir()
	shims := filepath.Join(home, ".pyenv", "shims")
	bin := filepath.Join(home, "bin")
	for _, d := range []string{shims, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	shim := filepath.Join(shims, "python3")
	if err := os.WriteFile(shim, []byte("#!/usr/bin/env bash\nset -e\nexec \"/root/.pyenv/libexec/pyenv\" exec \"python3\" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// jq in a plain bin directory, and a "shims" directory holding a
	// binary (mise's shims are links to its binary): no warning.
	if err := os.WriteFile(filepath.Join(bin, "jq"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shims+string(os.PathListSeparator)+bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	project := t.TempDir()
	script := writeScript(t, project, "guard.py", "")
	settings := writeFileAt(t, filepath.Join(project, "settings.json"), `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
		{"type": "command", "command": "python3 `+script+`"},
		{"type": "command", "command": "env PYTHONUNBUFFERED=1 python3 -u `+script+` --second"},
		{"type": "command", "command": "/usr/bin/env true && jq . >/dev/null"},
		{"type": "command", "command": "`+filepath.Join(shims, "python3")+` `+script+` --by-path-still-a-shim"},
		{"type": "command", "command": "python3", "args": ["`+script+`", "--exec-form"]}
	]}]}}`)
	sources, err := LoadSources([]string{settings}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var shimWarnings []string
	for _, w := range sources[0].Warnings {
		if strings.Contains(w, "shim") {
			shimWarnings = append(shimWarnings, w)
		}
	}
	if len(shimWarnings) != 3 {
		t.Fatalf("%d shim warnings, want 3 (hooks[0], hooks[1] and the exec form; not jq, not a path): %q", len(shimWarnings), sources[0].Warnings)
	}
	for i, where := range []string{"hooks[0]", "hooks[1]", "hooks[4]"} {
		if w := shimWarnings[i]; !strings.Contains(w, where) || !strings.Contains(w, shim) || !strings.Contains(w, `"python3"`) {
			t.Errorf("warning %d = %q, want it to name %s, %q and the shim %s", i, w, where, "python3", shim)
		}
	}
	if got := launchedPrograms("cd /x && FOO=1 exec python3 -c pass | command -p jq .; $X", nil, false); !slices.Equal(got, []string{"cd", "python3", "jq"}) {
		t.Errorf("launchedPrograms = %q, want cd, python3, jq", got)
	}
}
