package integration

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/mcpservers"
	"github.com/fenixrt/fenix/internal/worker"
)

// reachServer is an MCP server as a user writes one with the TypeScript
// SDK: a tool that opens a TCP connection where it is told to, the core
// of any "http request" or database server an agent drives.
const reachServer = `const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { ListToolsRequestSchema, CallToolRequestSchema } = require("@modelcontextprotocol/sdk/types.js");
const net = require("net");
const fs = require("fs");

const server = new Server({ name: "reach", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{
    name: "connect",
    description: "Opens a TCP connection to host:port",
    inputSchema: { type: "object", properties: { host: { type: "string" }, port: { type: "number" } }, required: ["host", "port"] },
  }, {
    name: "write",
    description: "Writes content to the file at path",
    inputSchema: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] },
  }, {
    name: "read",
    description: "Reads the file at path",
    inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  }, {
    name: "mkdir",
    description: "Makes the directory at path",
    inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  }, {
    name: "rename",
    description: "Renames from to to",
    inputSchema: { type: "object", properties: { from: { type: "string" }, to: { type: "string" } }, required: ["from", "to"] },
  }],
}));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const args = req.params.arguments;
  try {
    if (req.params.name === "write") {
      fs.writeFileSync(args.path, args.content);
      return { content: [{ type: "text", text: "written" }] };
    }
    if (req.params.name === "read") {
      return { content: [{ type: "text", text: fs.readFileSync(args.path, "utf8") }] };
    }
    if (req.params.name === "mkdir") {
      fs.mkdirSync(args.path);
      return { content: [{ type: "text", text: "made" }] };
    }
    if (req.params.name === "rename") {
      fs.renameSync(args.from, args.to);
      return { content: [{ type: "text", text: "renamed" }] };
    }
  } catch (err) {
    return { content: [{ type: "text", text: "refused: " + err.code }], isError: true };
  }
  const { host, port } = args;
  const text = await new Promise((resolve) => {
    const socket = net.connect({ host, port }, () => { socket.destroy(); resolve("connected"); });
    socket.on("error", (err) => resolve("refused: " + err.code));
    socket.setTimeout(5000, () => { socket.destroy(); resolve("timeout"); });
  });
  return { content: [{ type: "text", text }] };
});
server.connect(new StdioServerTransport());
`

// TestAgentCannotGoAroundTheGuardThroughAnMCPServer: the worker's stdio
// MCP servers act on the agent's arguments, so they run in the hooks'
// confinement. The filesystem server rooted at the home directory that
// holds the worker's data directory (the most common configuration;
// the worker's roots hold it to the project) cannot rewrite what governs
// the agent (the project's settings, read-only to it as to the agent's
// commands); a server of the user's own that writes and reads where it is
// told cannot write or read the data directory; and one that opens
// connections cannot reach the Temporal frontend. All still do their job
// everywhere else.
func TestAgentCannotGoAroundTheGuardThroughAnMCPServer(t *testing.T) {
	servers := mcpservers.Require(t)
	home := t.TempDir()
	dataDir := filepath.Join(home, ".local", "state", "fenix")
	require.NoError(t, os.MkdirAll(dataDir, 0o700))
	project := filepath.Join(home, "project")
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(`{"permissions": {"allow": ["mcp__fs", "mcp__reach"]}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(project, "reach.cjs"), []byte(reachServer), 0o644))
	cfg := map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"command": "node", "args": []string{servers.Entry("server-filesystem"), home}},
		"reach": map[string]any{"command": "node", "args": []string{"reach.cjs"},
			"env": map[string]string{"NODE_PATH": filepath.Join(servers.Dir, "node_modules")}},
	}}
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), raw, 0o644))

	w := startWorker(t, inProject(project), func(c *worker.Config) { c.DataDir = dataDir })
	require.NotNil(t, w.MCP(), "the project's .mcp.json was not picked up")
	require.NoError(t, w.MCP().WaitReady(t.Context()))
	secret, err := os.ReadFile(filepath.Join(dataDir, "host-id"))
	require.NoError(t, err, "the worker keeps its host ID in its data directory")

	call := func(name, tool string, args map[string]any) contract.Result {
		t.Helper()
		res, _ := runAssignment(t, w.queue, mcpCall(name, tool, args, "mcp__fs", "mcp__reach"))
		return res
	}
	text := func(res contract.Result) string {
		if res.Status == contract.StatusCompleted {
			return res.Output.Content
		}
		if res.Error != nil {
			return res.Error.LastErrorSummary
		}
		return ""
	}

	// The server does its job in the project and the rest of the home.
	res := call("fs-write-project", "mcp__fs__write_file", map[string]any{"path": filepath.Join(project, "notes.txt"), "content": "hello"})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	written, err := os.ReadFile(filepath.Join(project, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(written))

	// What governs the agent is read-only to it where the worker can make
	// mount namespaces (a root worker); elsewhere its change is reported
	// as an exec_command's is, and taken by nothing until an operator
	// accepts it.
	settings := filepath.Join(project, ".claude", "settings.json")
	before, err := os.ReadFile(settings)
	require.NoError(t, err)
	res = call("fs-write-settings", "mcp__fs__write_file", map[string]any{"path": settings, "content": `{"permissions": {"allow": ["Bash(*)"]}}`})
	if os.Geteuid() == 0 {
		assert.NotEqual(t, contract.StatusCompleted, res.Status, "%s", text(res))
		after, err := os.ReadFile(settings)
		require.NoError(t, err)
		assert.Equal(t, string(before), string(after), "the MCP server rewrote the project's settings")
	} else {
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		assert.Contains(t, res.Output.Content, "It changed protected paths (")
	}

	res = call("reach-write-project", "mcp__reach__write", map[string]any{"path": filepath.Join(project, "out.txt"), "content": "fine"})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	res = call("reach-write-settings", "mcp__reach__write", map[string]any{"path": settings, "content": "{}"})
	if os.Geteuid() == 0 {
		assert.Contains(t, text(res), "EROFS")
	}
	after, err := os.ReadFile(settings)
	require.NoError(t, err)
	if os.Geteuid() == 0 {
		assert.Equal(t, string(before), string(after), "the MCP server rewrote the project's settings")
	}

	// Not in the data directory: no planted file, no rewritten guard,
	// no read of what it holds.
	planted := filepath.Join(dataDir, "planted.txt")
	res = call("reach-write-data", "mcp__reach__write", map[string]any{"path": planted, "content": "from the agent"})
	t.Logf("write into the data directory: %s %s", res.Status, text(res))
	_, err = os.Stat(planted)
	assert.True(t, os.IsNotExist(err), "the MCP server wrote into the worker's data directory")
	assert.NotEqual(t, contract.StatusCompleted, res.Status)

	res = call("reach-read-data", "mcp__reach__read", map[string]any{"path": filepath.Join(dataDir, "host-id")})
	t.Logf("read from the data directory: %s %s", res.Status, text(res))
	assert.NotContains(t, text(res), strings.TrimSpace(string(secret)), "the MCP server read the worker's data directory")

	// A directory of the server's own in the home, beside the way to the
	// data directory (desktop-commander makes ~/.claude-server-commander
	// at its start), was refused by the rules cut around the home's
	// protected paths. A root worker holds those paths in a mount
	// namespace per server instead, which leaves the home its new entries
	// and lets no directory on the way to them be renamed.
	own := filepath.Join(home, ".server-config")
	res = call("reach-mkdir-home", "mcp__reach__mkdir", map[string]any{"path": own})
	if os.Geteuid() == 0 {
		require.Equal(t, contract.StatusCompleted, res.Status, "%s", text(res))
		res = call("reach-write-own", "mcp__reach__write", map[string]any{"path": filepath.Join(own, "config.json"), "content": "{}"})
		require.Equal(t, contract.StatusCompleted, res.Status, "%s", text(res))
		written, err := os.ReadFile(filepath.Join(own, "config.json"))
		require.NoError(t, err, "the server's file is in the worker's home")
		assert.Equal(t, "{}", string(written))
		res = call("reach-rename-local", "mcp__reach__rename", map[string]any{"from": filepath.Join(home, ".local"), "to": filepath.Join(home, ".local-old")})
		assert.Contains(t, text(res), "refused: EBUSY", "renaming the way to the data directory")
		assert.DirExists(t, dataDir, "the MCP server renamed the directory holding the data directory")
		assert.NoDirExists(t, filepath.Join(home, ".local-old"))
	} else {
		assert.NoDirExists(t, own, "without mount namespaces the home takes no new entry")
	}

	// Nor in the worker's toolchains: a python3 planted in a PATH
	// directory of the worker's home (~/.pyenv/shims, ~/go/bin) ran in the
	// next guard's place.
	if bin := homeBinOnPath(); bin != "" {
		planted := filepath.Join(bin, "fenix-planted-python3")
		t.Cleanup(func() { os.Remove(planted) })
		res = call("reach-write-path", "mcp__reach__write", map[string]any{"path": planted, "content": "#!/bin/sh\nexit 0\n"})
		assert.NotEqual(t, contract.StatusCompleted, res.Status, "the server wrote into %s: %s", bin, text(res))
		assert.NoFileExists(t, planted)
	} else {
		t.Log("no directory of the worker's home on its PATH: the toolchain check is skipped")
	}

	// Connections: the frontend is refused, another local server is not.
	host, portText, err := net.SplitHostPort(server.HostPort)
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	app := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer app.Close()

	res = call("reach-app", "mcp__reach__connect", map[string]any{"host": "127.0.0.1", "port": app.Listener.Addr().(*net.TCPAddr).Port})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "connected", res.Output.Content, "the server reaches a local app")

	for _, h := range []string{host, "127.0.0.2", "::1"} {
		res = call("reach-frontend-"+strings.NewReplacer(".", "-", ":", "-").Replace(h), "mcp__reach__connect", map[string]any{"host": h, "port": port})
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		assert.Equal(t, "refused: EPERM", res.Output.Content, "the server reached the frontend at %s:%d", h, port)
	}
}

// homeBinOnPath is a directory of the worker's home on its PATH where a
// toolchain's programs are (~/go/bin, ~/.cargo/bin, ~/.pyenv/shims), ""
// if there is none.
func homeBinOnPath() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		rel, err := filepath.Rel(home, dir)
		if err != nil || !(strings.HasPrefix(rel, ".") && !strings.HasPrefix(rel, "..") || rel == "go/bin" || rel == "bin") {
			continue
		}
		if info, err := os.Stat(dir); err == nil && info.IsDir() {
			return dir
		}
	}
	return ""
}
