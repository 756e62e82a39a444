package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path"
	"slices"
	"testing"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/benchfs"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/workspace"
)

// A single-file workspace tool must not grow with the workspace. Each op
// is what ExecuteTool does for one call: open the confined workspace, run
// the Define'd tool through the registry, close:
//
//	go test -run '^$' -bench 'WorkspaceFileTools' -benchtime 200x ./tools
//
// "tree" is a project tree (directories of 100 files, ten per level
// above); "flat" puts every file in the workspace root. The read is of a
// file in the middle; the write replaces a file next to it.
func BenchmarkWorkspaceFileTools(b *testing.B) {
	r := Builtin()
	for _, shape := range []struct {
		name  string
		build func(testing.TB, string, int) string
	}{{"tree", benchfs.Tree}, {"flat", benchfs.Flat}} {
		for _, sz := range benchfs.Sizes {
			dir := b.TempDir()
			middle := shape.build(b, dir, sz.Files)
			written := path.Join(path.Dir(middle), "written.txt")
			for _, c := range []struct {
				tool string
				args map[string]any
			}{
				{"workspace_read", map[string]any{"path": middle}},
				{"workspace_write", map[string]any{"path": written, "content": "package main // rewritten\n"}},
			} {
				b.Run(c.tool+"/"+shape.name+"/"+sz.Name, func(b *testing.B) {
					call := contract.ToolCall{CallID: "c1", ToolName: c.tool, Arguments: c.args}
					b.ReportAllocs()
					for b.Loop() {
						ws, err := workspace.Open(dir)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := r.Execute(context.Background(), &Env{CallID: "c1", Workspace: ws}, call); err != nil {
							b.Fatal(err)
						}
						ws.Close()
					}
				})
			}
		}
	}
}

// benchRegistry has n tools: renamed copies of the built-in ones, so
// each has a real schema and executor. calculator is the first copy of
// the calculator.
func benchRegistry(b *testing.B, n int) (r *Registry, names []string, calculator string) {
	b.Helper()
	builtin := Builtin().all()
	defs := make([]Definition, n)
	names = make([]string, n)
	for i := range n {
		d := builtin[i%len(builtin)]
		if d.Name == "calculator" && calculator == "" {
			calculator = fmt.Sprintf("t%03d_%s", i, d.Name)
		}
		d.Name = fmt.Sprintf("t%03d_%s", i, d.Name)
		defs[i], names[i] = d, d.Name
	}
	r, err := NewRegistry(defs...)
	if err != nil {
		b.Fatal(err)
	}
	if calculator == "" {
		b.Fatalf("no calculator among the first %d built-in tools", n)
	}
	return r, names, calculator
}

// How the tool registry costs with the number of registered tools, each
// allowed to the agent: the review of one call (per call; the called tool
// is last in the allow-list), and the tool list a model call sends (per
// model call; list_bytes is the JSON of its definitions):
//
//	go test -run '^$' -bench 'RegisteredTools' -benchtime 2000x ./tools
func BenchmarkRegisteredTools(b *testing.B) {
	for _, n := range []int{15, 500} {
		r, names, calc := benchRegistry(b, n)
		// The called tool last: the allow-list check scans the list.
		allowed := append(slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s == calc }), calc)
		agent := contract.AgentContext{Profile: "main", AllowedToolNames: allowed}
		call := contract.ToolCall{CallID: "c1", ToolName: calc, Arguments: map[string]any{"expression": "6 * 7"}}
		b.Run(fmt.Sprintf("review/tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Review(call, agent); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("tool-list/tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if defs := r.Allowed(agent.AllowedToolNames); len(defs) != n {
					b.Fatalf("%d tools allowed, want %d", len(defs), n)
				}
			}
			raw, err := json.Marshal(r.Allowed(agent.AllowedToolNames))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(raw)), "list_bytes")
		})
	}
}

// exec_command `true` next to os/exec running the same `sh -c true`: what
// the tool adds to the command (the start gate and limits, the run's
// record before and after, the output pumps, the cleanup after the
// leader exits):
//
//	go test -run '^$' -bench 'ExecCommandTrue' -benchtime 300x ./tools
func BenchmarkExecCommandTrue(b *testing.B) {
	b.Run("exec_command", func(b *testing.B) {
		r := newRig(b)
		call := contract.ToolCall{CallID: "c1", ToolName: "exec_command", Arguments: map[string]any{"command_line": "true"}}
		for b.Loop() {
			if _, err := r.reg.Execute(context.Background(), r.env, call); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Unconfined (FENIX_COMMAND_CONFINEMENT=off): what the Landlock
	// domain costs a command (the ruleset check, a thread of its own).
	b.Run("exec_command-unconfined", func(b *testing.B) {
		r := newRig(b, func(c *HostConfig) { c.Confinement = confine.ModeOff })
		call := contract.ToolCall{CallID: "c1", ToolName: "exec_command", Arguments: map[string]any{"command_line": "true"}}
		for b.Loop() {
			if _, err := r.reg.Execute(context.Background(), r.env, call); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Fenced off the Temporal frontend (the worker binary's default,
	// FENIX_COMMAND_UNREACHABLE=frontend, with a local frontend): what
	// attaching the connect programs to the command's cgroup costs.
	b.Run("exec_command-fenced", func(b *testing.B) {
		r := newRig(b, func(c *HostConfig) { c.Unreachable = []string{"127.0.0.1:7233"} })
		call := contract.ToolCall{CallID: "c1", ToolName: "exec_command", Arguments: map[string]any{"command_line": "true"}}
		for b.Loop() {
			if _, err := r.reg.Execute(context.Background(), r.env, call); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Under Claude Code's sandbox, with and without its network part (a
	// root worker): what joining the workspace's network namespace and
	// the socket filter cost a command beyond the write boundary.
	for _, withNetwork := range []bool{false, true} {
		name := "exec_command-sandbox"
		sandbox := confine.Policy{Boundary: &confine.Boundary{}}
		if withNetwork {
			name += "-network"
			none := netguard.DomainList{Setting: "bench"}
			sandbox.Network = &confine.Network{Dial: none.DialContext(&net.Dialer{}), Describe: none.String()}
		}
		b.Run(name, func(b *testing.B) {
			r := newRig(b)
			if err := r.host.SetCommandSandbox(sandbox, true, []string{"bench"}); err != nil {
				b.Fatal(err)
			}
			call := contract.ToolCall{CallID: "c1", ToolName: "exec_command", Arguments: map[string]any{"command_line": "true"}}
			if _, err := r.reg.Execute(context.Background(), r.env, call); err != nil {
				b.Skipf("no sandbox here: %v", err)
			}
			for b.Loop() {
				if _, err := r.reg.Execute(context.Background(), r.env, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// With a session environment as an nvm setup's `export -p` diff
	// leaves it: what every command of such a session pays to run it.
	b.Run("exec_command+session_env", func(b *testing.B) {
		r := newRig(b)
		r.env.SessionEnv = benchSessionEnv
		call := contract.ToolCall{CallID: "c1", ToolName: "exec_command", Arguments: map[string]any{"command_line": "true"}}
		for b.Loop() {
			if _, err := r.reg.Execute(context.Background(), r.env, call); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os-exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("sh", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchSessionEnv is a SessionStart hook's $CLAUDE_ENV_FILE after an nvm
// and a venv setup (as sh reads it: export, not declare -x).
const benchSessionEnv = `export MANPATH="/home/dev/.nvm/versions/node/v20.11.0/share/man:/usr/share/man"
export NVM_BIN="/home/dev/.nvm/versions/node/v20.11.0/bin"
export NVM_CD_FLAGS=""
export NVM_DIR="/home/dev/.nvm"
export NVM_INC="/home/dev/.nvm/versions/node/v20.11.0/include/node"
export PATH="/home/dev/project/.venv/bin:/home/dev/.nvm/versions/node/v20.11.0/bin:/usr/local/bin:/usr/bin:/bin"
export VIRTUAL_ENV="/home/dev/project/.venv"
export VIRTUAL_ENV_PROMPT="(.venv) "
export NODE_ENV=development
`
