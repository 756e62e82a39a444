package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fenixrt/fenix/internal/readlimit"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools/mcp"
)

// loginTimeout bounds the wait for the operator's browser.
const loginTimeout = 10 * time.Minute

const mcpLoginUsage = `Usage: worker mcp-login SERVER [-client-credentials [-client-key FILE]] [-client-metadata-url URL] [worker flags]

Signs in to the remote MCP server SERVER (its key in .mcp.json) that needs
OAuth, and stores the tokens in the worker's data directory, where the
worker sends and refreshes them. Give the flags the worker runs with
(-data-dir, -hooks-file, -mcp-config, or their FENIX_* variables), as the
worker's user. The command prints the authorization URL; the browser's
redirect must reach http://localhost:PORT/callback on this host (from
another machine: ssh -L PORT:localhost:PORT). A pre-registered client's
secret is read from MCP_CLIENT_SECRET.

-client-credentials signs in as a service account instead (the client
credentials grant): .mcp.json's oauth.clientId and MCP_CLIENT_SECRET, no
browser; the worker takes a new token at each connection. With
-client-key FILE (or MCP_CLIENT_KEY_FILE) the account proves itself with
the PEM private key in FILE instead of a secret (private_key_jwt: an EC,
RSA or Ed25519 key whose public half the authorization server holds); the
key is kept with the sign-in in the data directory.

-client-metadata-url URL (or MCP_CLIENT_METADATA_URL) names a Client ID
Metadata Document you publish for your workers: an authorization server
that supports such documents takes the URL as the client's ID instead of
registering a client. Its redirect_uris must hold the callback above, so
fix the port with .mcp.json's oauth.callbackPort.
`

// runMCPLogin is `worker mcp-login SERVER [flags]`.
func runMCPLogin(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprint(stderr, mcpLoginUsage)
		return flag.ErrHelp
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, mcpLoginUsage)
		return errors.New("mcp-login: name the server first: worker mcp-login SERVER [flags]")
	}
	name := args[0]
	// -client-credentials, -client-key and -client-metadata-url are
	// mcp-login's own; the rest are the worker's.
	var workerArgs []string
	serviceAccount := false
	metadataURL, keyFile := os.Getenv("MCP_CLIENT_METADATA_URL"), os.Getenv("MCP_CLIENT_KEY_FILE")
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch flagName, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "="); {
		case strings.HasPrefix(a, "-") && flagName == "client-credentials":
			serviceAccount = true
		case strings.HasPrefix(a, "-") && (flagName == "client-metadata-url" || flagName == "client-key"):
			if !hasValue {
				if i+1 == len(rest) {
					return fmt.Errorf("mcp-login: -%s needs a value", flagName)
				}
				i++
				value = rest[i]
			}
			if flagName == "client-key" {
				keyFile = value
			} else {
				metadataURL = value
			}
		default:
			workerArgs = append(workerArgs, a)
		}
	}
	var clientKey []byte
	if keyFile != "" {
		if !serviceAccount {
			return errors.New("mcp-login: -client-key is a service account's key: add -client-credentials")
		}
		var err error
		if clientKey, err = readlimit.File(keyFile, 1<<20); err != nil {
			return fmt.Errorf("mcp-login: -client-key: %w", err)
		}
	}
	cfg, err := worker.LoadConfig(workerArgs, os.Getenv, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	res, err := worker.LoginMCP(ctx, cfg, name, mcp.LoginOptions{
		ClientSecret:      os.Getenv("MCP_CLIENT_SECRET"),
		ClientCredentials: serviceAccount,
		ClientMetadataURL: metadataURL,
		ClientKey:         clientKey,
		Open: func(_ context.Context, authorizationURL, redirectURL string) error {
			_, err := fmt.Fprintf(stderr, "Open this URL in a browser to sign in to MCP server %q:\n\n  %s\n\nWaiting for the redirect to %s ...\n", name, authorizationURL, redirectURL)
			return err
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "Signed in to MCP server %q (%d tools); the worker on data directory %s uses the token from its next connection to the server.\n", name, res.Tools, cfg.DataDir)
	return nil
}
