package worker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hook projects the hooks keep reaching where they keep to their
// session's workspace in the bases: a project directory or a settings
// file's project in a base, not one elsewhere (an operator's
// ~/.claude/settings.json would make the home writable to hooks).
func TestHookProjectsInTheBases(t *testing.T) {
	base, elsewhere := t.TempDir(), t.TempDir()
	project := filepath.Join(base, "policy")
	plugin := filepath.Join(base, "plugins", "lint")
	for _, d := range []string{filepath.Join(project, ".claude"), plugin, filepath.Join(elsewhere, ".claude")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	settings := filepath.Join(project, ".claude", "settings.json")
	operator := filepath.Join(elsewhere, ".claude", "settings.json")
	for _, f := range []string{settings, operator} {
		require.NoError(t, os.WriteFile(f, []byte("{}"), 0o644))
	}
	got := hookProjectsIn([]string{settings, plugin, operator, base}, []string{base})
	assert.Equal(t, []string{project, plugin}, got)
}
