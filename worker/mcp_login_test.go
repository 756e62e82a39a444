package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/internal/harness/oauthmcp"
)

// `worker mcp-login SERVER` with the worker's flags prints the
// authorization URL, takes the browser's redirect and stores the tokens
// in the worker's data directory.
func TestMCPLoginCommand(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers": {"notes": {"type": "http", "url": "`+srv.URL+`"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	out, in := io.Pipe()
	printed := make(chan string, 64)
	go func() {
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			line := scanner.Text()
			printed <- line
			if u, ok := strings.CutPrefix(line, "  http"); ok {
				// The operator opens the URL the command printed.
				go func() { _ = oauthmcp.Browse(context.Background(), "http"+u, "") }()
			}
		}
		close(printed)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := runMCPLogin(ctx, []string{"notes", "-data-dir", dataDir, "-mcp-config", config}, in)
	in.Close()
	var lines []string
	for l := range printed {
		lines = append(lines, l)
	}
	all := strings.Join(lines, "\n")
	if err != nil {
		t.Fatalf("mcp-login: %v\n%s", err, all)
	}
	if !strings.Contains(all, `Open this URL in a browser to sign in to MCP server "notes"`) || !strings.Contains(all, `Signed in to MCP server "notes" (1 tools)`) {
		t.Fatalf("output:\n%s", all)
	}
	stored, _ := filepath.Glob(filepath.Join(dataDir, "mcp-oauth", "notes-*.json"))
	if len(stored) != 1 {
		t.Fatalf("stored sign-ins: %v", stored)
	}

	for args, want := range map[string]string{
		"":                           "name the server first",
		"-data-dir " + dataDir:       "name the server first",
		"wiki -mcp-config " + config: `no MCP server "wiki" in ` + config + " (servers: notes)",
		"notes -data-dir " + dataDir: `no MCP configuration to find server "notes" in`,
		"notes -client-metadata-url": "-client-metadata-url needs a value",
		"notes -client-key /k.pem":   "add -client-credentials",
		"notes -client-metadata-url=http://fleet.example.com/c.json -data-dir " + dataDir + " -mcp-config " + config: "want an https URL with a path",
	} {
		err := runMCPLogin(ctx, strings.Fields(args), io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mcp-login %s: %v, want %q", args, err, want)
		}
	}
}

// `worker mcp-login SERVER -client-credentials` signs a service account in
// without a browser.
func TestMCPLoginCommandForAServiceAccount(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	srv.ServiceAccount("fenix-fleet", "s3cret")
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers": {"notes": {"type": "http", "url": "`+srv.URL+`", "oauth": {"clientId": "fenix-fleet"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCP_CLIENT_SECRET", "s3cret")
	var out strings.Builder
	dataDir := filepath.Join(dir, "data")
	if err := runMCPLogin(context.Background(), []string{"notes", "-client-credentials", "-data-dir", dataDir, "-mcp-config", config}, &out); err != nil {
		t.Fatalf("mcp-login: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "Open this URL") || !strings.Contains(out.String(), `Signed in to MCP server "notes" (1 tools)`) {
		t.Fatalf("output:\n%s", out.String())
	}
}

// `worker mcp-login SERVER -client-credentials -client-key FILE` signs in
// a service account that proves itself with its key.
func TestMCPLoginCommandForAServiceAccountWithAKey(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srv.ServiceAccountKey("fenix-fleet", &key.PublicKey)
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile, config := filepath.Join(dir, "fleet.pem"), filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(`{"mcpServers": {"notes": {"type": "http", "url": "`+srv.URL+`", "oauth": {"clientId": "fenix-fleet"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	args := []string{"notes", "-client-credentials", "-client-key", keyFile, "-data-dir", filepath.Join(dir, "data"), "-mcp-config", config}
	if err := runMCPLogin(context.Background(), args, &out); err != nil {
		t.Fatalf("mcp-login: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `Signed in to MCP server "notes" (1 tools)`) || srv.Assertions.Load() != 1 {
		t.Fatalf("assertions %d, output:\n%s", srv.Assertions.Load(), out.String())
	}
}
