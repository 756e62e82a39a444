package worker

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/tools/mcp"
)

// A start keeps the accepted policy when what changed lies within the
// agents' reach, adopts what changed elsewhere (the operator's files),
// and adopts everything when the operator says so.
func TestChoosePolicy(t *testing.T) {
	workspace := "/srv/work/app"
	inWorkspace := func(path string) bool { return strings.HasPrefix(path, "/srv/work/") }
	settings := func(path, data string) claudecode.SnapshotFile {
		return claudecode.SnapshotFile{Path: path, Data: []byte(data)}
	}
	accepted := &acceptedPolicy{How: "first start",
		Hooks: claudecode.Snapshot{Files: []claudecode.SnapshotFile{
			settings("/etc/fenix/hooks.json", `{"hooks":{}}`),
			settings(workspace+"/.claude/settings.json", `{"permissions":{"deny":["Bash(curl:*)"]}}`),
		}},
		MCP: []mcp.ConfigFile{{Path: workspace + "/.mcp.json", Project: true, Missing: true}},
	}
	with := func(change func(p *acceptedPolicy)) *acceptedPolicy {
		p := &acceptedPolicy{Hooks: claudecode.Snapshot{Files: slices.Clone(accepted.Hooks.Files)}, MCP: slices.Clone(accepted.MCP)}
		change(p)
		return p
	}
	projectRewritten := with(func(p *acceptedPolicy) {
		p.Hooks.Files[1] = settings(workspace+"/.claude/settings.json", `{"permissions":{"allow":["Bash(*)"]}}`)
	})
	serverAdded := with(func(p *acceptedPolicy) {
		p.MCP[0] = mcp.ConfigFile{Path: workspace + "/.mcp.json", Project: true, Data: []byte(`{"mcpServers":{"x":{"command":"x"}}}`)}
	})
	localAdded := with(func(p *acceptedPolicy) {
		p.Hooks.Files = append(p.Hooks.Files, settings(workspace+"/.claude/settings.local.json", `{}`))
	})
	operatorEdit := with(func(p *acceptedPolicy) {
		p.Hooks.Files[0] = settings("/etc/fenix/hooks.json", `{"hooks":{"Stop":[]}}`)
	})

	for _, tc := range []struct {
		name      string
		accepted  *acceptedPolicy
		onDisk    *acceptedPolicy
		diskErr   error
		accept    bool
		writable  func(string) bool
		keep      bool
		why       string
		wantError string
	}{
		{name: "first start", onDisk: projectRewritten, why: "first start"},
		{name: "first start, the disk does not load", diskErr: errors.New("settings.json: not JSON"), wantError: "not JSON"},
		{name: "unchanged", accepted: accepted, onDisk: with(func(*acceptedPolicy) {}), why: "unchanged"},
		{name: "project settings rewritten", accepted: accepted, onDisk: projectRewritten, keep: true,
			why: workspace + "/.claude/settings.json changed"},
		{name: "server added to .mcp.json", accepted: accepted, onDisk: serverAdded, keep: true, why: workspace + "/.mcp.json created"},
		{name: "local settings added", accepted: accepted, onDisk: localAdded, keep: true, why: workspace + "/.claude/settings.local.json created"},
		{name: "the operator's file outside the workspaces", accepted: accepted, onDisk: operatorEdit, why: "changed outside the workspaces only"},
		{name: "the operator's file, commands unconfined", accepted: accepted, onDisk: operatorEdit, writable: func(string) bool { return true }, keep: true,
			why: "/etc/fenix/hooks.json changed"},
		{name: "accepted by the operator", accepted: accepted, onDisk: projectRewritten, accept: true, why: "-accept-policy-change"},
		{name: "the disk does not load", accepted: accepted, diskErr: errors.New("settings.json: not JSON"), keep: true, why: "does not load: settings.json: not JSON"},
		{name: "the disk does not load, accepted by the operator", accepted: accepted, diskErr: errors.New("not JSON"), accept: true, wantError: "-accept-policy-change: the policy on disk does not load"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writable := tc.writable
			if writable == nil {
				writable = inWorkspace
			}
			choice, err := choosePolicy(tc.accepted, tc.onDisk, tc.diskErr, tc.accept, writable)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("err = %v, want %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if choice.keep != tc.keep || !strings.Contains(choice.why, tc.why) {
				t.Errorf("keep = %v (%s), want %v (%s)", choice.keep, choice.why, tc.keep, tc.why)
			}
		})
	}
}

// The MCP files' changes: created, removed (a project's file deleted, or
// a configured file no longer named), rewritten; a project that has no
// .mcp.json before or after is no change.
func TestAcceptedPolicyMCPChanges(t *testing.T) {
	file := func(path, data string) mcp.ConfigFile {
		if data == "" {
			return mcp.ConfigFile{Path: path, Project: true, Missing: true}
		}
		return mcp.ConfigFile{Path: path, Data: []byte(data)}
	}
	accepted := &acceptedPolicy{MCP: []mcp.ConfigFile{file("/p/.mcp.json", `{"a":1}`), file("/q/.mcp.json", ""), file("/etc/mcp.json", `{}`)}}
	now := &acceptedPolicy{MCP: []mcp.ConfigFile{file("/p/.mcp.json", ""), file("/q/.mcp.json", ""), file("/r/.mcp.json", `{}`)}}
	got := accepted.changes(now)
	want := []claudecode.SnapshotChange{{Path: "/p/.mcp.json", What: "removed"}, {Path: "/r/.mcp.json", What: "created"}, {Path: "/etc/mcp.json", What: "removed"}}
	if !slices.Equal(got, want) {
		t.Errorf("changes = %v, want %v", got, want)
	}
	if got := accepted.changes(accepted); len(got) != 0 {
		t.Errorf("changes against itself = %v", got)
	}
}

// The record survives a round trip; a damaged one is an error naming it
// and the way out, not an empty policy.
func TestAcceptedPolicyRecord(t *testing.T) {
	dir := t.TempDir()
	if p, err := readAcceptedPolicy(dir); p != nil || err != nil {
		t.Fatalf("no record: %v, %v", p, err)
	}
	rec := &acceptedPolicy{How: "SIGHUP", Hooks: claudecode.Snapshot{Files: []claudecode.SnapshotFile{{Path: "/p/.claude/settings.json", Data: []byte(`{"x":1}`),
		Trees: []claudecode.SnapshotTree{{Source: "/p/.claude/hooks", Stored: "/d/hook-scripts/ab", Hash: "abc", Launched: []string{"g.sh"}}}}}},
		MCP: []mcp.ConfigFile{{Path: "/p/.mcp.json", Project: true, Missing: true}}}
	if err := rec.write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := readAcceptedPolicy(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.changes(back)) != 0 || back.How != "SIGHUP" || back.Hooks.Files[0].Trees[0].Stored != "/d/hook-scripts/ab" {
		t.Errorf("read back %+v", back)
	}
	path := filepath.Join(dir, acceptedPolicyFile)
	if err := os.WriteFile(path, []byte(`{"how": "start", "hooks": {"files": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readAcceptedPolicy(dir); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "-accept-policy-change") {
		t.Errorf("damaged record: %v", err)
	}
}
