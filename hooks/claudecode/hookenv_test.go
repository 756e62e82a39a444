package claudecode

import (
	"slices"
	"testing"
)

// Every git a hook runs has core.fsmonitor off, after whatever git
// configuration the settings' "env" gives it.
func TestHooksRunGitWithoutAFSMonitor(t *testing.T) {
	env := hookEnv([]string{"PATH=/usr/bin", "GIT_CONFIG_COUNT=7"}, nil, nil, nil)
	for _, want := range []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=false"} {
		if !slices.Contains(env, want) {
			t.Errorf("env %q lacks %s (the worker's own GIT_CONFIG_COUNT is not inherited)", env, want)
		}
	}
	settings := map[string]string{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": "ci"}
	env = hookEnv(nil, nil, settings, nil)
	for _, want := range []string{"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_KEY_1=core.fsmonitor", "GIT_CONFIG_VALUE_1=false"} {
		if !slices.Contains(env, want) {
			t.Errorf("env %q lacks %s", env, want)
		}
	}
}
