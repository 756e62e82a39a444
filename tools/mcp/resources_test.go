package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/tools/mcp"
)

// docsServer is a Streamable HTTP server (the go-sdk's) exposing n
// resources: text ones, a large one and an image.
func docsServer(t *testing.T, n int) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "docs", Version: "1"}, &sdk.ServerOptions{PageSize: 50})
	add := func(uri, name, mime, description string, contents *sdk.ResourceContents) {
		s.AddResource(&sdk.Resource{URI: uri, Name: name, MIMEType: mime, Description: description},
			func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
				return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{contents}}, nil
			})
	}
	add("docs://runbook", "runbook", "text/markdown", "How to page the on-call engineer.",
		&sdk.ResourceContents{URI: "docs://runbook", MIMEType: "text/markdown", Text: "# Runbook\nPage #oncall."})
	add("docs://big", "big", "text/plain", "", &sdk.ResourceContents{URI: "docs://big", MIMEType: "text/plain", Text: strings.Repeat("x", 5000)})
	add("docs://logo", "logo", "image/png", "", &sdk.ResourceContents{URI: "docs://logo", MIMEType: "image/png", Blob: []byte("\x89PNG fake")})
	for i := 3; i < n; i++ {
		uri := fmt.Sprintf("docs://page/%d", i)
		add(uri, fmt.Sprintf("page %d", i), "text/plain", strings.Repeat("d", 2000), &sdk.ResourceContents{URI: uri, Text: "page"})
	}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The resources MCP servers expose reach the agent through two tools,
// as in Claude Code: listed only while a server offers resources, read
// by server and URI, large and binary contents kept out of the result,
// and every bad request named.
func TestMCPServersResourcesAreListedAndRead(t *testing.T) {
	_, url := askingServer(t, make(chan struct{}, 1), make(chan struct{}))
	m, reg, store := startManager(t, `{"mcpServers": {"docs": {"type": "http", "url": "${DOCS}"}, "asking": {"type": "http", "url": "${ASKING}"}}}`,
		map[string]string{"DOCS": docsServer(t, 120), "ASKING": url}, "docs", "asking")
	var names []string
	for _, d := range m.Definitions() {
		names = append(names, d.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "list_mcp_resources read_mcp_resource") {
		t.Fatalf("definitions %v lack the resource tools", names)
	}

	p, err := call(t, reg, mcp.ListResourcesTool, map[string]any{"server": "docs"}, mcp.ListResourcesTool)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Content, `"uri":"docs://big"`) || !strings.Contains(p.Content, `"server":"docs"`) || p.Metadata["truncated"] != true {
		t.Fatalf("listing: %v %.300s", p.Metadata, p.Content)
	}
	if total := p.Metadata["total"].(int); total < 50 || total >= 120 {
		t.Fatalf("listing of 120 resources with 2 KB descriptions holds %d: want it cut to its 128 KiB bound past the first page", total)
	}

	p, err = call(t, reg, mcp.ReadResourceTool, map[string]any{"server": "docs", "uri": "docs://runbook"}, mcp.ReadResourceTool)
	if err != nil || p.Content != "# Runbook\nPage #oncall." || p.Metadata["uri"] != "docs://runbook" {
		t.Fatalf("runbook: %q %v %v", p.Content, p.Metadata, err)
	}
	// Each content apart in the context store too, for the gateway's
	// resources/read, which answers with contents, not a narrative.
	attached, err := tools.AttachmentsOf(p.Metadata)
	if err != nil || len(attached) != 1 || !attached[0].Text || attached[0].URI != "docs://runbook" || string(store.data[attached[0].Ref]) != "# Runbook\nPage #oncall." {
		t.Fatalf("runbook attachments = %+v, %v", attached, err)
	}
	p, err = call(t, reg, mcp.ReadResourceTool, map[string]any{"server": "docs", "uri": "docs://big"}, mcp.ReadResourceTool)
	if err != nil || !strings.Contains(p.Content, "[5000 bytes in all, stored as ") || len(store.data) == 0 {
		t.Fatalf("big: %.200q %v", p.Content, err)
	}
	p, err = call(t, reg, mcp.ReadResourceTool, map[string]any{"server": "docs", "uri": "docs://logo"}, mcp.ReadResourceTool)
	if err != nil || !strings.Contains(p.Content, "[resource docs://logo, image/png, 9 bytes, stored as ") {
		t.Fatalf("logo: %q %v", p.Content, err)
	}

	for args, want := range map[string]string{
		`{"server": "docs", "uri": "docs://nowhere"}`: `MCP server "docs" has no resource "docs://nowhere"`,
		`{"server": "wiki", "uri": "docs://runbook"}`: `no MCP server "wiki" on this worker (servers: asking, docs)`,
		`{"server": "asking", "uri": "docs://x"}`:     `MCP server "asking" offers no resources`,
		`{"uri": "docs://runbook"}`:                   `server`,
	} {
		var decoded map[string]any
		if err := json.Unmarshal([]byte(args), &decoded); err != nil {
			t.Fatal(err)
		}
		_, err := call(t, reg, mcp.ReadResourceTool, decoded, mcp.ReadResourceTool)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("read %s: %v, want %q", args, err, want)
		}
	}
	if _, err := call(t, reg, mcp.ReadResourceTool, map[string]any{"server": "docs", "uri": "docs://nowhere"}, mcp.ReadResourceTool); fenixerr.As(err).Code != mcp.CodeResourceNotFound {
		t.Errorf("a resource the server does not have: %v, want code %s (the gateway's not found)", err, mcp.CodeResourceNotFound)
	}
	if _, err := call(t, reg, mcp.ListResourcesTool, map[string]any{}, "calculator"); err == nil {
		t.Error("a tool outside allowed_tool_names ran")
	}
	toolsOnly := askingManager(t, url)
	for _, d := range toolsOnly.Definitions() {
		if d.Name == mcp.ListResourcesTool || d.Name == mcp.ReadResourceTool {
			t.Errorf("%s is offered though no server exposes resources", d.Name)
		}
	}
	d, _ := reg.Lookup(mcp.ReadResourceTool)
	if host, ok := tools.HostOfResource(d.OwnerResource(map[string]any{})); !ok || host != "test-host" {
		t.Errorf("resource reads are not pinned to the servers' host: %q", host)
	}
}

// A server whose tools/list never ends (a next cursor on every page) held
// the worker's memory until the connect timeout, on every connection and
// list change. The listing stops at its page bound and serves what it
// read.
func TestToolListingsAreBounded(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "pager", Version: "1"}, &sdk.ServerOptions{PageSize: 1})
	for i := range 60 {
		sdk.AddTool(s, &sdk.Tool{Name: fmt.Sprintf("tool_%02d", i), Description: "one of many"},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, struct{}, error) {
				return &sdk.CallToolResult{}, struct{}{}, nil
			})
	}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	m, _, _ := startManager(t, `{"mcpServers": {"pager": {"type": "http", "url": "${PAGER}"}}}`, map[string]string{"PAGER": srv.URL}, "pager")
	served := 0
	for _, d := range m.Definitions() {
		if strings.HasPrefix(d.Name, "mcp__pager__tool_") {
			served++
		}
	}
	if served != 50 {
		t.Errorf("%d of the server's 60 tools on 60 pages are served, want the first 50 pages'", served)
	}
}
