package claudecode

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The MCP server keys of Claude Code's settings are read, merged across
// files as its scopes are, and a malformed one is an error naming it: a
// deny list misread would start what it denies.
func TestMCPServerSettingsAreReadAndMerged(t *testing.T) {
	project := t.TempDir()
	shared := writeFileAt(t, filepath.Join(project, ".claude", "settings.json"), `{
	  "disabledMcpjsonServers": ["filesystem"],
	  "deniedMcpServers": [{"serverName": "dangerous"}, {"serverCommand": ["npx", "-y", "unapproved-package"]}]}`)
	local := writeFileAt(t, filepath.Join(project, ".claude", "settings.local.json"), `{
	  "enabledMcpjsonServers": ["memory", "github"],
	  "allowedMcpServers": [{"serverName": "memory"}, {"serverUrl": "https://*.example.com/*"}]}`)
	managed := writeFileAt(t, filepath.Join(t.TempDir(), "managed-settings.json"), `{"enableAllProjectMcpServers": false, "allowedMcpServers": []}`)
	var sources []*Source
	for _, p := range []string{managed, shared, local} {
		src, err := LoadSource(p, LoadOptions{})
		require.NoError(t, err)
		assert.NotContains(t, strings.Join(src.Warnings, "\n"), "McpServers", "the keys are acted on")
		assert.NotContains(t, strings.Join(src.Warnings, "\n"), "Mcpjson", "the keys are acted on")
		sources = append(sources, src)
	}
	merged := MergedMCPServerSettings(sources)
	require.NotNil(t, merged)
	require.NotNil(t, merged.EnableAllProject)
	assert.False(t, *merged.EnableAllProject)
	assert.Equal(t, []string{"memory", "github"}, merged.EnabledProject)
	assert.Equal(t, []string{"filesystem"}, merged.DisabledProject)
	require.NotNil(t, merged.Allowed, "an allowlist is set")
	assert.Equal(t, []MCPServerEntry{{ServerName: "memory"}, {ServerURL: "https://*.example.com/*"}}, *merged.Allowed)
	assert.Equal(t, []MCPServerEntry{{ServerName: "dangerous"}, {ServerCommand: []string{"npx", "-y", "unapproved-package"}}}, merged.Denied)

	empty, err := LoadSource(writeFileAt(t, filepath.Join(t.TempDir(), "settings.json"), `{"allowedMcpServers": [], "enabledMcpjsonServers": []}`), LoadOptions{})
	require.NoError(t, err)
	lockdown := MergedMCPServerSettings([]*Source{empty})
	require.NotNil(t, lockdown.Allowed, "an empty allowlist is a lockdown, not no list")
	assert.Empty(t, *lockdown.Allowed)
	assert.NotNil(t, lockdown.EnabledProject, "an empty approval list approves none, it is not unset")
	assert.Nil(t, MergedMCPServerSettings([]*Source{{Path: "none"}}), "no file says anything")

	for _, tc := range []struct{ settings, want string }{
		{`{"deniedMcpServers": [{"serverName": "x", "serverCommand": ["x"]}]}`, "deniedMcpServers[0]: an entry names exactly one of serverName, serverCommand and serverUrl"},
		{`{"allowedMcpServers": [{}]}`, "allowedMcpServers[0]: an entry names exactly one"},
		{`{"deniedMcpServers": [{"name": "x"}]}`, `deniedMcpServers: json: unknown field "name"`},
		{`{"disabledMcpjsonServers": "filesystem"}`, "disabledMcpjsonServers: json: cannot unmarshal string"},
		{`{"enableAllProjectMcpServers": "yes"}`, "enableAllProjectMcpServers: json: cannot unmarshal string"},
	} {
		path := writeFileAt(t, filepath.Join(t.TempDir(), "settings.json"), tc.settings)
		_, err := LoadSource(path, LoadOptions{})
		if assert.Error(t, err, tc.settings) {
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}
