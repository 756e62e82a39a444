package mcp_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/tools/mcp"
)

func TestParseExpandsVariablesAsClaudeCode(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret", "HOST": "127.0.0.1", "EMPTY": ""}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	doc := `{"mcpServers": {
		"api": {"type": "http", "url": "http://${HOST}:${PORT:-3001}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
		"fs": {"command": "${BIN:-npx}", "args": ["-y", "$TOKEN", "${EMPTY:-unused}", "${MISSING}"], "env": {"KEY": "${TOKEN}"}},
		"my.server": {"command": "node"}
	}}`
	servers, warnings, err := mcp.Parse([]byte(doc), "/p/.mcp.json", getenv)
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 3 {
		t.Fatalf("servers = %+v", servers)
	}
	api, fs, dotted := servers[0], servers[1], servers[2]
	if api.Type != mcp.TransportHTTP || api.URL != "http://127.0.0.1:3001/mcp" || api.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("api = %+v", api)
	}
	// $TOKEN stays as written, a set-but-empty variable is used, a missing
	// one is kept as written with a warning.
	if fs.Command != "npx" || !reflect.DeepEqual(fs.Args, []string{"-y", "$TOKEN", "", "${MISSING}"}) || fs.Env["KEY"] != "s3cret" || fs.Dir != "/p" {
		t.Errorf("fs = %+v", fs)
	}
	if dotted.Name != "my_server" {
		t.Errorf("name = %q, want my_server", dotted.Name)
	}
	joined := strings.Join(warnings, "\n")
	if !strings.Contains(joined, "MISSING") || !strings.Contains(joined, `"my_server"`) {
		t.Errorf("warnings = %q", warnings)
	}
}

func TestParseSkipsBadEntriesAndNamesThem(t *testing.T) {
	doc := `{"mcpServers": {
		"good": {"command": "node"},
		"nocmd": {"args": ["x"]},
		"sse": {"type": "sse", "url": "http://x/sse"},
		"badsse": {"type": "sse", "url": "ftp://x/sse"},
		"ws": {"type": "ws", "url": "ws://x"},
		"badurl": {"type": "http", "url": "file:///etc/passwd"},
		"a__b": {"command": "node"},
		"vault_": {"command": "node"},
		"odd.": {"command": "node"}
	}}`
	servers, warnings, err := mcp.Parse([]byte(doc), "a/.mcp.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 2 || servers[0].Name != "good" || servers[1].Name != "sse" || servers[1].Type != mcp.TransportSSE || servers[1].URL != "http://x/sse" {
		t.Fatalf("servers = %+v", servers)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{`"nocmd" in a/.mcp.json has no "command"`, `"badsse" in a/.mcp.json has url "ftp://x/sse"`, `unknown type "ws"`, `"badurl"`, `"a__b" in a/.mcp.json: the name contains "__"`,
		`"vault_" in a/.mcp.json: the name ends in "_"`, `"odd." in a/.mcp.json: the name ends in "_"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q: %s", want, joined)
		}
	}
	if _, _, err := mcp.Parse([]byte(`{"servers": {}}`), "b/.mcp.json", nil); err == nil || !strings.Contains(err.Error(), `b/.mcp.json has no "mcpServers"`) {
		t.Errorf("err = %v", err)
	}
}

func TestLoadFilesAndProjectDirectories(t *testing.T) {
	project := t.TempDir()
	other := filepath.Join(t.TempDir(), "extra.json")
	os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers": {"a": {"command": "one"}, "b": {"command": "two"}}}`), 0o600)
	os.WriteFile(other, []byte(`{"mcpServers": {"b": {"command": "three"}}}`), 0o600)
	empty := t.TempDir() // a project without .mcp.json is fine
	res, err := mcp.Load([]string{project, empty, other}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Servers) != 2 || res.Servers[1].Command != "three" || len(res.Warnings) != 1 {
		t.Fatalf("load = %+v", res)
	}
	if _, err := mcp.Load([]string{filepath.Join(project, "nope.json")}, nil); err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Fatalf("missing file: %v", err)
	}
}
