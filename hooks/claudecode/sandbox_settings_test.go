package claudecode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A project's "sandbox" turns Claude Code's Bash sandbox on for
// exec_command and process_exec: its paths resolve as Claude Code's do,
// what Fenix cannot apply is named at load, and the files' lists add up.
func TestSandboxSettingsBecomeTheCommandPolicy(t *testing.T) {
	project := t.TempDir()
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	path := writeFileAt(t, filepath.Join(project, ".claude", "settings.json"), `{"sandbox": {
	  "enabled": true, "failIfUnavailable": true, "autoAllowBashIfSandboxed": true,
	  "network": {"allowedDomains": ["github.com", "*.npmjs.org:443", "*.com"], "deniedDomains": ["evil.npmjs.org"], "allowLocalBinding": true, "allowUnixSockets": ["/var/run/docker.sock"]},
	  "filesystem": {
	    "allowWrite": ["//var/cache/build", "~/.kube", "/generated", "out"],
	    "denyWrite": ["//etc/app", "./local-only", "../elsewhere"],
	    "denyRead": ["~/.aws/credentials", "//home/**/secrets"]}}}`)
	src, err := LoadSource(path, LoadOptions{})
	require.NoError(t, err)
	require.NotNil(t, src.Sandbox)
	assert.Equal(t, []string{"/var/cache/build", filepath.Join(home, ".kube"), filepath.Join(project, "generated"), "out"}, src.Sandbox.AllowWrite)
	assert.Equal(t, []string{"/etc/app", "local-only"}, src.Sandbox.DenyWrite, "a relative path is each workspace's")
	assert.Equal(t, []string{filepath.Join(home, ".aws", "credentials")}, src.Sandbox.DenyRead)
	warnings := strings.Join(src.Warnings, "\n")
	assert.Equal(t, "github.com *.npmjs.org:443", fmt.Sprint(src.Sandbox.AllowedDomains[0], " ", src.Sandbox.AllowedDomains[1]))
	assert.Len(t, src.Sandbox.AllowedDomains, 2, "the too broad *.com is skipped")
	for _, want := range []string{"sandbox.network.allowLocalBinding is not acted on", "sandbox.network.allowUnixSockets is not acted on: as in Claude Code on Linux", `sandbox.network.allowedDomains: domain "*.com"`,
		`denyWrite "../elsewhere" is the workspace or leads out of it`, `denyRead "//home/**/secrets" is a pattern`} {
		assert.Contains(t, warnings, want)
	}
	assert.NotContains(t, warnings, `settings key "sandbox"`)
	assert.NotContains(t, warnings, "autoAllowBashIfSandboxed", "acted on: under dontAsk it approves sandboxed commands")
	assert.True(t, src.Sandbox.AutoAllowBash)

	user := writeFileAt(t, filepath.Join(t.TempDir(), "settings.json"), `{"sandbox": {"enabled": true, "filesystem": {"allowWrite": ["//srv/shared"]}, "network": {"allowedDomains": ["pypi.org"], "allowAllUnixSockets": false}},
	  "permissions": {"allow": ["WebFetch(domain:docs.python.org)", "WebFetch"], "deny": ["WebFetch(domain:*.pastebin.com)"], "ask": ["WebFetch(domain:ask.example.com)"]}}`)
	off := writeFileAt(t, filepath.Join(t.TempDir(), "settings.json"), `{"sandbox": {"enabled": false, "filesystem": {"allowWrite": ["//anywhere"]}}}`)
	var sources []*Source
	for _, p := range []string{user, off, path} {
		s, err := LoadSource(p, LoadOptions{})
		require.NoError(t, err)
		sources = append(sources, s)
	}
	policy, fail, from := CommandPolicy(sources)
	require.NotNil(t, policy.Boundary)
	assert.Equal(t, []string{"/srv/shared", "/var/cache/build", filepath.Join(home, ".kube"), filepath.Join(project, "generated"), "out"}, policy.Boundary.Writable)
	assert.Equal(t, append([]string{"/etc/app", "local-only"}, sandboxMandatoryDenyWrite...), policy.Boundary.DenyWrite,
		"the files Claude Code's sandbox always holds (.vscode, .gitmodules, .bashrc, …) follow the settings' own")
	assert.Equal(t, []string{filepath.Join(home, ".aws", "credentials")}, policy.Boundary.DenyRead)
	assert.Empty(t, policy.Hidden, "the sandbox's lists are the Boundary's, which holds them inside a workspace by other means")
	assert.True(t, fail)
	assert.Equal(t, []string{user, path}, from)
	require.NotNil(t, policy.Network, "with the sandbox on, commands reach only the allowed domains")
	assert.Equal(t, "allowed pypi.org, github.com, *.npmjs.org:443, docs.python.org; denied evil.npmjs.org, *.pastebin.com", policy.Network.Describe,
		"WebFetch(domain:…) allow and deny rules count, as in Claude Code")
	assert.False(t, policy.Network.UnixSockets, "Unix sockets stay refused unless a file allows them all")
	_, err = policy.Network.Dial(t.Context(), "tcp", "evil.npmjs.org:443")
	assert.ErrorContains(t, err, "evil.npmjs.org:443 is on the denied domains of sandbox.network of "+user+", "+path)

	sockets := writeFileAt(t, filepath.Join(t.TempDir(), "settings.json"), `{"sandbox": {"enabled": true, "network": {"allowAllUnixSockets": true}}}`)
	src, err = LoadSource(sockets, LoadOptions{})
	require.NoError(t, err)
	open, _, _ := CommandPolicy(append(sources, src))
	assert.True(t, open.Network.UnixSockets)

	none, fail, from := CommandPolicy(sources[1:2])
	assert.Nil(t, none.Boundary, "a file that turns the sandbox off adds nothing")
	assert.Nil(t, none.Network)
	assert.False(t, fail)
	assert.Empty(t, from)
}
