package claudecode

import (
	"maps"
	"os"
	"strconv"
	"strings"
)

// inheritedEnv are the worker's variables a hook process inherits: what
// a shell session gives any program Claude Code starts (search path, home,
// user, locale, terminal, temporary directory, time zone). Everything else
// in the worker's environment — FENIX_OPENAI_API_KEY, TEMPORAL_*, cloud
// credentials — stays in the worker. A hook that needs a variable gets it
// from the settings file's "env" key, as in Claude Code.
var inheritedEnv = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TERM": true, "TMPDIR": true, "TZ": true,
}

// hookEnv is a hook process's environment: the inherited variables of
// environ, then what the worker sets for every hook (LoadOptions.HookEnv),
// then the settings file's "env", then what the hook event sets
// (CLAUDE_PROJECT_DIR and friends), later ones winning.
func hookEnv(environ []string, worker, settings, event map[string]string) []string {
	merged := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && (inheritedEnv[name] || strings.HasPrefix(name, "LC_")) {
			merged[name] = value
		}
	}
	for k, v := range worker {
		merged[k] = v
	}
	for k, v := range settings {
		merged[k] = v
	}
	for k, v := range event {
		merged[k] = v
	}
	withoutFSMonitor(merged)
	return envList(merged)
}

// withoutFSMonitor turns git's core.fsmonitor off for every git a hook
// runs, after the configuration the hook's environment already gives
// (GIT_CONFIG_COUNT). A fsmonitor is a program git runs on `git status`,
// named by a repository's config: an agent that cannot write the
// workspace's .git/config (its commands hold it read-only) can still make
// a repository of its own in a subdirectory and add it to the index, and
// the hook's `git status` in the workspace then runs one in it too, with
// that repository's config — outside the agent's sandbox. The setting
// reaches those runs (git passes GIT_CONFIG_COUNT to submodules); it only
// costs a repository using a real fsmonitor some speed.
func withoutFSMonitor(env map[string]string) {
	n := 0
	if c, err := strconv.Atoi(env["GIT_CONFIG_COUNT"]); err == nil && c > 0 {
		n = c
	}
	env["GIT_CONFIG_KEY_"+strconv.Itoa(n)] = "core.fsmonitor"
	env["GIT_CONFIG_VALUE_"+strconv.Itoa(n)] = "false"
	env["GIT_CONFIG_COUNT"] = strconv.Itoa(n + 1)
}

// HookProcessEnv is the environment of a process the worker starts for
// its configuration as it starts a hook (an MCP server's headersHelper):
// the worker's inherited variables, then worker (Host.HookEnv).
func HookProcessEnv(worker map[string]string) []string {
	return hookEnv(processEnv(), worker, nil, nil)
}

// processEnv is the worker's environment, a variable for tests.
var processEnv = os.Environ

// CommandEnv merges the loaded files' "env" into the variables every
// exec_command and process_exec gets, as Claude Code gives them to every
// process of a session: the value of the file of highest precedence
// wins (settingsRank: a project's local file over its settings.json over
// the user's; the later loaded among equals); from names the files that
// set any.
func CommandEnv(sources []*Source) (env map[string]string, from []string) {
	for _, src := range byPrecedence(sources) {
		if len(src.env) == 0 {
			continue
		}
		if env == nil {
			env = map[string]string{}
		}
		maps.Copy(env, src.env)
		from = append(from, src.Path)
	}
	return env, from
}
