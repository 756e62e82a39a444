package claudecode

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fenixrt/fenix/confine"
)

// Sandbox is a settings file's "sandbox" object as Fenix applies it to
// exec_command and process_exec: Claude Code sandboxes its Bash tool with
// bubblewrap; Fenix runs those commands in a Landlock domain (package
// confine) with the same filesystem boundary.
type Sandbox struct {
	// Enabled is sandbox.enabled: commands write only in their workspace,
	// their temporary directory and AllowWrite.
	Enabled bool
	// FailIfUnavailable refuses commands where the sandbox cannot be
	// applied, instead of running them unsandboxed with a warning.
	FailIfUnavailable bool
	// AllowWrite, DenyWrite and DenyRead are sandbox.filesystem's lists,
	// resolved: "//x" is /x, "~/x" is in the home directory, "/x" is in
	// the project (the directory holding .claude/), and other paths are
	// relative to the command's workspace (AllowWrite only).
	AllowWrite, DenyWrite, DenyRead []string
}

type sandboxSettings struct {
	Enabled           *bool `json:"enabled"`
	FailIfUnavailable bool  `json:"failIfUnavailable"`
	Filesystem        struct {
		AllowWrite []string `json:"allowWrite"`
		DenyWrite  []string `json:"denyWrite"`
		DenyRead   []string `json:"denyRead"`
	} `json:"filesystem"`
}

// sandboxKeysNotApplied are the sandbox keys Fenix reads but does not act
// on, with why.
var sandboxKeysNotApplied = map[string]string{
	"network":                  "commands reach the network as the worker does (web_fetch has its own allowlist)",
	"autoAllowBashIfSandboxed": "permission rules decide as without a sandbox (nothing is approved for being sandboxed)",
	"excludedCommands":         "every command is sandboxed",
	"allowUnsandboxedCommands": "no command leaves the sandbox",
	"credentials":              "commands get only PATH, HOME, LANG, TERM and FENIX_EXEC_ENV_ALLOW from the worker anyway",
}

// parseSandbox reads the "sandbox" object.
func (src *Source) parseSandbox(raw json.RawMessage) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return fmt.Errorf("hook settings %s: sandbox must be an object: %w", src.Path, err)
	}
	var s sandboxSettings
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("hook settings %s: sandbox: %w", src.Path, err)
	}
	for key := range keys {
		if why, ok := sandboxKeysNotApplied[key]; ok {
			src.warn("%s: sandbox.%s is not acted on: %s", src.Path, key, why)
		}
	}
	if s.Enabled == nil || !*s.Enabled {
		return nil
	}
	sb := &Sandbox{Enabled: true, FailIfUnavailable: s.FailIfUnavailable}
	resolve := func(list string, paths []string, relativeOK bool) []string {
		var out []string
		for _, p := range paths {
			if strings.ContainsAny(p, "*?[") {
				src.warn("%s: sandbox.filesystem.%s %q is a pattern; Fenix applies paths, so it is skipped", src.Path, list, p)
				continue
			}
			abs, ok := src.sandboxPath(p)
			if !ok && !relativeOK {
				src.warn("%s: sandbox.filesystem.%s %q is relative to the workspace, where Fenix cannot take a path away from a command without taking the workspace's root with it; it is skipped (name it from the project, \"/%s\", to protect it in other workspaces)", src.Path, list, p, strings.TrimPrefix(p, "./"))
				continue
			}
			out = append(out, abs)
		}
		return out
	}
	sb.AllowWrite = resolve("allowWrite", s.Filesystem.AllowWrite, true)
	sb.DenyWrite = resolve("denyWrite", s.Filesystem.DenyWrite, false)
	sb.DenyRead = resolve("denyRead", s.Filesystem.DenyRead, false)
	src.Sandbox = sb
	return nil
}

// sandboxPath resolves a sandbox path; ok is false for one relative to
// the workspace, which comes back cleaned but relative.
func (src *Source) sandboxPath(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, "//"):
		return filepath.Clean(p[1:]), true
	case strings.HasPrefix(p, "~/") || p == "~":
		home, _ := os.UserHomeDir()
		return filepath.Join(home, strings.TrimPrefix(p, "~")), true
	case strings.HasPrefix(p, "/"):
		base := src.Paths.ProjectDir
		if base == "" {
			base = src.Paths.Dir
		}
		return filepath.Join(base, p), true
	default:
		return filepath.Clean(p), false
	}
}

// CommandPolicy merges the loaded files' sandboxes into what confines
// commands: the sandbox is on when any file turns it on (a project cannot
// loosen a user's), and the lists add up, as Claude Code merges them
// across scopes. fail is whether any file with the sandbox on asks for a
// hard failure where it cannot be applied; from names those files.
func CommandPolicy(sources []*Source) (p confine.Policy, fail bool, from []string) {
	for _, src := range sources {
		sb := src.Sandbox
		if sb == nil || !sb.Enabled {
			continue
		}
		from = append(from, src.Path)
		if p.Boundary == nil {
			p.Boundary = &confine.Boundary{}
		}
		p.Boundary.Writable = append(p.Boundary.Writable, sb.AllowWrite...)
		p.Boundary.DenyWrite = append(p.Boundary.DenyWrite, sb.DenyWrite...)
		p.Boundary.DenyRead = append(p.Boundary.DenyRead, sb.DenyRead...)
		fail = fail || sb.FailIfUnavailable
	}
	return p, fail, from
}
