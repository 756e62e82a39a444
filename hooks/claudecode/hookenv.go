package claudecode

import (
	"os"
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
// environ, then the settings file's "env", then what the hook event sets
// (CLAUDE_PROJECT_DIR and friends), later ones winning.
func hookEnv(environ []string, settings, event map[string]string) []string {
	merged := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && (inheritedEnv[name] || strings.HasPrefix(name, "LC_")) {
			merged[name] = value
		}
	}
	for k, v := range settings {
		merged[k] = v
	}
	for k, v := range event {
		merged[k] = v
	}
	return envList(merged)
}

// processEnv is the worker's environment, a variable for tests.
var processEnv = os.Environ
