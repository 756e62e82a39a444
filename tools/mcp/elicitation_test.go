package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/tools/mcp"
)

// askingServer is a Streamable HTTP server (the go-sdk's) whose "ask"
// tool asks its client's user for an account during the call and whose
// "hold" tool says it started on holding and waits for release to close.
func askingServer(t *testing.T, holding, release chan struct{}) (*sdk.Server, string) {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "asking", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "ask"}, func(ctx context.Context, req *sdk.CallToolRequest, _ map[string]any) (*sdk.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Which account?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{
				"account": map[string]any{"type": "string"},
				"region":  map[string]any{"type": "string", "default": "eu"},
			}}})
		if err != nil {
			return nil, nil, err
		}
		var kv []string
		for k, v := range res.Content {
			kv = append(kv, fmt.Sprintf("%s=%v", k, v))
		}
		sort.Strings(kv)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.TrimSpace(res.Action + " " + strings.Join(kv, " "))}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "hold"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ map[string]any) (*sdk.CallToolResult, any, error) {
		holding <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "released"}}}, nil, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func askingManager(t *testing.T, url string) *mcp.Manager {
	t.Helper()
	m, _, _ := startManager(t, `{"mcpServers": {"asking": {"type": "http", "url": "${URL}"}}}`, map[string]string{"URL": url}, "asking")
	return m
}

// A server's question during a call reaches the one who made the call,
// whose answer goes back with the form's defaults filled in; a call with
// nobody to ask, or a question while several calls are in flight on the
// session (it could belong to either), is cancelled.
func TestAServersQuestionReachesTheCallThatAsked(t *testing.T) {
	holding, release := make(chan struct{}, 1), make(chan struct{})
	_, url := askingServer(t, holding, release)
	m := askingManager(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var asked []tools.Elicitation
	person := func(_ context.Context, q tools.Elicitation) (tools.ElicitationAnswer, error) {
		asked = append(asked, q)
		return tools.ElicitationAnswer{Action: "accept", Content: map[string]any{"account": "acme"}}, nil
	}
	res, err := m.CallAsking(ctx, "asking", "ask", map[string]any{}, person)
	if err != nil || res.Text() != "accept account=acme region=eu" {
		t.Fatalf("answered call = %q, %v", res.Text(), err)
	}
	if len(asked) != 1 || asked[0].ServerName != "asking" || asked[0].ToolName != "mcp__asking__ask" || asked[0].Message != "Which account?" ||
		asked[0].Mode != "form" || asked[0].RequestedSchema["type"] != "object" {
		t.Fatalf("question = %+v", asked)
	}

	res, err = m.Call(ctx, "asking", "ask", map[string]any{})
	if err != nil || res.Text() != "cancel" {
		t.Fatalf("call with nobody to ask = %q, %v", res.Text(), err)
	}

	held := make(chan error, 1)
	go func() {
		_, err := m.Call(ctx, "asking", "hold", map[string]any{})
		held <- err
	}()
	<-holding
	res, err = m.CallAsking(ctx, "asking", "ask", map[string]any{}, person)
	close(release)
	if err != nil || res.Text() != "cancel" {
		t.Fatalf("question beside another call = %q, %v", res.Text(), err)
	}
	if len(asked) != 1 {
		t.Fatalf("a question while two calls were in flight reached a person: %+v", asked)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}

// A Streamable HTTP server announces what belongs to no request on the
// session's standalone stream (a GET the client keeps open): a tool
// added after the worker connected reaches the registry.
func TestStreamableHTTPServersAnnounceChangesOnTheirStandaloneStream(t *testing.T) {
	s, url := askingServer(t, make(chan struct{}, 1), make(chan struct{}))
	m := askingManager(t, url)
	sdk.AddTool(s, &sdk.Tool{Name: "late"}, func(context.Context, *sdk.CallToolRequest, map[string]any) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late"}}}, nil, nil
	})
	waitFor(t, func() bool { return slices.Contains(statusOf(m, "asking").Tools, "mcp__asking__late") }, "the late tool announced by tools/list_changed")
}
