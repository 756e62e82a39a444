package mcp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/mcp"
)

func stdio(key string, project bool, command ...string) mcp.ServerConfig {
	return mcp.ServerConfig{Name: mcp.NormalizeName(key), Key: key, Type: mcp.TransportStdio, Command: command[0], Args: command[1:], Project: project, Path: "/p/.mcp.json"}
}

func remote(key, url string) mcp.ServerConfig {
	return mcp.ServerConfig{Name: key, Key: key, Type: mcp.TransportHTTP, URL: url, Path: "/etc/fenix/mcp.json"}
}

func names(servers []mcp.ServerConfig) string {
	var out []string
	for _, s := range servers {
		out = append(out, s.Key)
	}
	return strings.Join(out, ",")
}

// The rules of Claude Code's settings, one case each: what runs, and
// that every server left out is named with the setting that kept it.
func TestServerRulesDecideWhatRuns(t *testing.T) {
	memory := stdio("memory", true, "npx", "-y", "@modelcontextprotocol/server-memory")
	fs := stdio("filesystem", true, "npx", "-y", "@modelcontextprotocol/server-filesystem", "/")
	dotted := stdio("team.db", true, "node", "db.js")
	given := stdio("ops", false, "/opt/ops-mcp")
	docs := remote("docs", "https://docs.example.com/mcp")
	other := remote("other", "https://evil.example.net/mcp")
	all := []mcp.ServerConfig{memory, fs, dotted, given, docs, other}
	for _, tc := range []struct {
		name  string
		rules mcp.ServerRules
		want  string
	}{
		{"no settings: the worker's configuration approves", mcp.ServerRules{}, "memory,filesystem,team.db,ops,docs,other"},
		{"disabledMcpjsonServers rejects project servers only",
			mcp.ServerRules{RejectedProject: []string{"filesystem", "ops"}}, "memory,team.db,ops,docs,other"},
		{"enabledMcpjsonServers approves only what it names",
			mcp.ServerRules{ApprovalGiven: true, ApprovedProject: []string{"memory", "team.db"}}, "memory,team.db,ops,docs,other"},
		{"enableAllProjectMcpServers: false approves none",
			mcp.ServerRules{ApprovalGiven: true}, "ops,docs,other"},
		{"enableAllProjectMcpServers: true, rejection still wins",
			mcp.ServerRules{ApprovalGiven: true, ApproveAllProject: true, RejectedProject: []string{"memory"}}, "filesystem,team.db,ops,docs,other"},
		{"deniedMcpServers by name, command and url",
			mcp.ServerRules{Denied: []mcp.ServerMatch{{Name: "team.db"}, {Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/"}}, {URL: "https://*.example.net/*"}}},
			"memory,ops,docs"},
		{"a command entry matches the whole command only",
			mcp.ServerRules{Denied: []mcp.ServerMatch{{Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem"}}}},
			"memory,filesystem,team.db,ops,docs,other"},
		{"an empty allowlist allows none", mcp.ServerRules{AllowlistSet: true}, ""},
		{"an allowlist by name",
			mcp.ServerRules{AllowlistSet: true, Allowed: []mcp.ServerMatch{{Name: "memory"}, {Name: "docs"}}}, "memory,docs"},
		{"with a command entry, stdio servers must match a command; remote ones still go by name",
			mcp.ServerRules{AllowlistSet: true, Allowed: []mcp.ServerMatch{{Name: "filesystem"}, {Name: "other"}, {Command: []string{"npx", "-y", "@modelcontextprotocol/server-memory"}}}},
			"memory,other"},
		{"with a url entry, remote servers must match a url",
			mcp.ServerRules{AllowlistSet: true, Allowed: []mcp.ServerMatch{{Name: "other"}, {Name: "ops"}, {URL: "https://docs.example.com/*"}}},
			"ops,docs"},
		{"denial wins over the allowlist",
			mcp.ServerRules{AllowlistSet: true, Allowed: []mcp.ServerMatch{{Name: "memory"}}, Denied: []mcp.ServerMatch{{Name: "memory"}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, refused := tc.rules.Apply(all)
			if got := names(run); got != tc.want {
				t.Fatalf("run %q, want %q (refused: %q)", got, tc.want, refused)
			}
			if len(run)+len(refused) != len(all) {
				t.Fatalf("%d run and %d refused of %d: %q", len(run), len(refused), len(all), refused)
			}
			for _, r := range refused {
				why := r.String()
				named := false
				for _, setting := range []string{"deniedMcpServers", "allowedMcpServers", "disabledMcpjsonServers", "enabledMcpjsonServers"} {
					named = named || strings.Contains(why, setting)
				}
				if !strings.Contains(why, "is not started: ") || !named {
					t.Errorf("refusal %q does not name the setting that kept the server", why)
				}
			}
		})
	}
}

// A server the rules keep out never starts, and its tools are refused
// by name with the setting, not reported as unknown.
func TestRefusedServersToolsAreDenied(t *testing.T) {
	m, err := mcp.NewManager([]mcp.ServerConfig{stdio("vault", false, "vault-mcp"), stdio("memory", false, "memory-mcp")},
		mcp.Options{HostID: "test-host", Rules: mcp.ServerRules{Denied: []mcp.ServerMatch{{Name: "vault"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Refused(); len(got) != 1 || !strings.Contains(got[0], `MCP server "vault"`) || !strings.Contains(got[0], "deniedMcpServers") {
		t.Fatalf("Refused() = %q", got)
	}
	_, ok, err := m.Tool("mcp__vault__read_secret")
	if ok || !errors.Is(err, fenixerr.ErrPermissionDenied) || !strings.Contains(err.Error(), "deniedMcpServers") {
		t.Fatalf("Tool of a denied server: ok=%v err=%v, want PermissionDeniedError naming deniedMcpServers", ok, err)
	}
	if _, ok, err := m.Tool("mcp__other__x"); ok || err != nil {
		t.Fatalf("Tool of an unknown server: ok=%v err=%v, want not found", ok, err)
	}
	for _, st := range m.Status() {
		if st.Name == "vault" {
			t.Fatal("the denied server is managed")
		}
	}
}
