package claudecode

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fenixrt/fenix/hooks"
)

func TestConfigChangeSourcesAreClaudeCodes(t *testing.T) {
	home := "/home/ada"
	for _, c := range []struct{ path, source, dir string }{
		{"/src/app/.claude/settings.json", hooks.ConfigProjectSettings, "/src/app"},
		{"/src/app/.claude/settings.local.json", hooks.ConfigLocalSettings, "/src/app"},
		{filepath.Join(home, ".claude", "settings.json"), hooks.ConfigUserSettings, home},
		{"/etc/claude-code/managed-settings.json", hooks.ConfigPolicySettings, "/etc/claude-code"},
		{"/src/app/.fenix/hooks.json", hooks.ConfigProjectSettings, "/src/app/.fenix"},
		{"/opt/plugins/lint/hooks/hooks.json", "", "/opt/plugins/lint/hooks"},
	} {
		source, dir := ConfigChangeSource(c.path, home)
		assert.Equal(t, c.source, source, c.path)
		assert.Equal(t, c.dir, dir, c.path)
	}
}
