package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stdio server gets the worker's PATH when its configuration sets
// none, and runs in the workspace: a relative entry there (".",
// "node_modules/.bin", or an empty one, which a shell reads as ".")
// resolved the server's program, or the node an npx it runs starts, to
// one the agent planted in the workspace, which the worker then ran at
// the server's next start. The server's PATH leaves such entries out.
func TestStdioServersPATHLeavesOutRelativeEntries(t *testing.T) {
	ws := t.TempDir()
	sys := t.TempDir()
	for dir, body := range map[string]string{ws: "planted", sys: "server"} {
		if err := os.WriteFile(filepath.Join(dir, "srvtool"), []byte("#!/bin/sh\necho "+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(ws) // a worker started from the project directory
	for _, path := range []string{".:" + sys, ":" + sys, sys + ":node_modules/.bin:"} {
		t.Setenv("PATH", path)
		s := &server{cfg: ServerConfig{Name: "notes", Type: TransportStdio, Command: "srvtool", Dir: ws}, m: &Manager{opts: Options{WorkDir: ws}}}
		cmd, err := s.command()
		if err != nil {
			t.Fatalf("PATH %q: %v", path, err)
		}
		if cmd.Path != filepath.Join(sys, "srvtool") {
			t.Errorf("PATH %q: the server's program is %q, want the system's %s", path, cmd.Path, filepath.Join(sys, "srvtool"))
		}
		for _, kv := range cmd.Env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				for _, dir := range filepath.SplitList(v) {
					if !filepath.IsAbs(dir) {
						t.Errorf("PATH %q: the server's PATH %q keeps the relative entry %q", path, v, dir)
					}
				}
			}
		}
	}
}
