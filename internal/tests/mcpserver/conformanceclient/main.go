// Command conformanceclient is the client under test in the conformance
// suite's client scenarios (`conformance client --command
// conformanceclient`): it connects as the worker does (an mcp.Manager)
// and calls the server's first tool with the arguments a model would
// pass. In the auth scenarios it first signs in as `worker mcp-login`
// does (mcp.Login), playing the browser's part by following the
// authorization URL's redirects to the login's callback
// (oauthmcp.Browse), and the Manager sends the stored token. A question
// the server asks during the call (elicitation) gets the answer of a
// person who accepts the form as shown, where the worker would ask the
// call's run. It exits 1 on the first failure.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/fenixrt/fenix/internal/harness/oauthmcp"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/tools/mcp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformanceclient:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: conformanceclient SERVER_URL")
	}
	url := os.Args[len(os.Args)-1]
	var scenario struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		// PrivateKeyPEM is the key of a service account that signs
		// assertions (private_key_jwt).
		PrivateKeyPEM string `json:"private_key_pem"`
	}
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &scenario); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	server := mcp.ServerConfig{Name: "conformance", Key: "conformance", Type: mcp.TransportHTTP, URL: url, Path: "the conformance scenario"}
	if scenario.ClientID != "" {
		server.OAuth = &mcp.OAuthConfig{ClientID: scenario.ClientID}
	}
	dir, err := os.MkdirTemp("", "conformanceclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store := mcp.NewCredentialStore(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()

	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if strings.HasPrefix(name, "auth/") {
		// The client credentials scenarios sign in as a service account;
		// the others as an operator who publishes the suite's Client ID
		// Metadata Document for their workers (-client-metadata-url),
		// which an authorization server that supports such documents
		// takes instead of a registration.
		res, err := mcp.Login(ctx, server, store, mcp.LoginOptions{ClientSecret: scenario.ClientSecret, Open: oauthmcp.Browse,
			ClientCredentials: strings.HasPrefix(name, "auth/client-credentials"), ClientKey: []byte(scenario.PrivateKeyPEM),
			ClientMetadataURL: "https://conformance-test.local/client-metadata.json"})
		if err != nil {
			return err
		}
		fmt.Printf("signed in: client %s, %d tools\n", res.Credentials.ClientID, res.Tools)
	}

	m, err := mcp.NewManager([]mcp.ServerConfig{server}, mcp.Options{HostID: "conformance", Credentials: store, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	defer m.Close()
	m.Start(10 * time.Second)
	if err := m.WaitReady(ctx); err != nil {
		return fmt.Errorf("connecting with the stored sign-in: %w (%+v)", err, m.Status())
	}
	st := m.Status()[0]
	if len(st.Tools) > 0 {
		tool := strings.TrimPrefix(st.Tools[0], "mcp__"+server.Name+"__")
		// The arguments a model would pass to the scenario's tool.
		args := map[string]any{}
		if tool == "add_numbers" {
			args = map[string]any{"a": 5, "b": 3}
		}
		// A person who accepts the form as it is shown, its defaults
		// filled in (the client applies the schema's defaults).
		acceptAsShown := func(_ context.Context, q tools.Elicitation) (tools.ElicitationAnswer, error) {
			fmt.Printf("asked by %s: %s\n", q.ServerName, q.Message)
			return tools.ElicitationAnswer{Action: "accept", Content: map[string]any{}}, nil
		}
		call, err := m.CallAsking(ctx, server.Name, tool, args, acceptAsShown)
		if err != nil {
			return fmt.Errorf("calling %s with the stored sign-in: %w", tool, err)
		}
		fmt.Printf("called %s: %s\n", tool, call.Text())
	}
	return nil
}
