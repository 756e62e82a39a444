package worker

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fenixrt/fenix/tools/mcp"
)

// mcpCredentialsDir, in the data directory, holds the OAuth sign-ins of
// the http MCP servers (mcp.CredentialStore): hidden from commands, hooks
// and the stdio servers with the rest of the data directory.
const mcpCredentialsDir = "mcp-oauth"

func mcpCredentials(cfg Config) *mcp.CredentialStore {
	return mcp.NewCredentialStore(filepath.Join(cfg.DataDir, mcpCredentialsDir))
}

// LoginMCP signs the operator in to the http MCP server named name (its
// key in .mcp.json, or its tools' server name) as configured on disk for
// the worker cfg describes, and stores the tokens where that worker reads
// them (see mcp.Login). The worker in use picks them up at the server's
// next connection attempt.
func LoginMCP(ctx context.Context, cfg Config, name string, opts mcp.LoginOptions) (mcp.LoginResult, error) {
	paths := mcpPaths(cfg)
	loaded, err := mcp.Load(paths, nil)
	if err != nil {
		return mcp.LoginResult{}, err
	}
	var names []string
	for _, s := range loaded.Servers {
		if s.Key == name || s.Name == name {
			opts.Net = cfg.HostConfig.Fetch
			return mcp.Login(ctx, s, mcpCredentials(cfg), opts)
		}
		names = append(names, s.Key)
	}
	if len(paths) == 0 {
		return mcp.LoginResult{}, fmt.Errorf("no MCP configuration to find server %q in: give the worker's -hooks-file project or -mcp-config", name)
	}
	return mcp.LoginResult{}, fmt.Errorf("no MCP server %q in %s (servers: %s)", name, strings.Join(mcpConfigFiles(cfg), ", "), strings.Join(names, ", "))
}
