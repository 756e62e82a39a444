package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/mcpserver"
	"github.com/fenixrt/fenix/workflows"
)

// cmdMCP serves the workers' governed tools over MCP: stdio by default
// (one .mcp.json entry for Claude Code), Streamable HTTP with -http.
func cmdMCP(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	httpAddr := fs.String("http", "", "serve Streamable HTTP at ADDR"+mcpserver.Path+" (and the older HTTP+SSE transport at ADDR"+mcpserver.SSEPath+") instead of stdio (beyond loopback a bearer token is required)")
	taskQueue := fs.String("task-queue", envOr("FENIX_TASK_QUEUE", workflows.DefaultTaskQueue), "the workers' task queue (env FENIX_TASK_QUEUE)")
	allow := fs.String("allow", os.Getenv("FENIX_MCP_ALLOW"), "comma-separated tools to serve: names, globs (workspace_*) or mcp__<server>; empty serves every tool the workers serve (env FENIX_MCP_ALLOW)")
	workspace := fs.String("workspace", os.Getenv("FENIX_MCP_WORKSPACE"), "workspace_root of every call; empty uses the worker's default (env FENIX_MCP_WORKSPACE)")
	profile := fs.String("profile", "main", "agent profile of every call")
	conversation := fs.String("conversation", "", "conversation_id of every call; default: one per MCP session (HTTP clients may send "+mcpserver.HeaderConversation+")")
	approvalTimeout := fs.Duration("approval-timeout", 0, "how long a call waits for a permission decision (default: the workflow's 10m)")
	elicit := fs.String("elicit-approval", envOr("FENIX_MCP_ELICIT_APPROVAL", mcpserver.ElicitDeny),
		"what a client supporting elicitation may decide of a call waiting for permission: deny (its decline denies; approval only by an operator: starter approve), allow (accept allows: only for clients that show the question to a human), off (never asked) (env FENIX_MCP_ELICIT_APPROVAL)")
	tokenFile := fs.String("token-file", "", "file holding the bearer token of the HTTP endpoint (default env FENIX_MCP_TOKEN)")
	origins := fs.String("allow-origin", "", "comma-separated browser origins allowed besides loopback ones (scheme://host:port)")
	oauthIssuer := fs.String("oauth-issuer", os.Getenv("FENIX_MCP_OAUTH_ISSUER"), "make the HTTP endpoint an OAuth protected resource of this authorization server (its issuer URL): clients sign in there and bring a JWT issued for -oauth-resource; instead of a bearer token (env FENIX_MCP_OAUTH_ISSUER)")
	oauthResource := fs.String("oauth-resource", os.Getenv("FENIX_MCP_OAUTH_RESOURCE"), "the endpoint's URL as clients reach it (https://fenix.example.com/mcp), which tokens must name as their audience (env FENIX_MCP_OAUTH_RESOURCE)")
	dataDir := fs.String("data-dir", os.Getenv("FENIX_DATA_DIR"), "the workers' data directory (their -data-dir), whose context store holds the images, audio, resources and long texts tools return (env FENIX_DATA_DIR)")
	contextStore := fs.String("context-store", os.Getenv(contextstore.Setting), "the workers' context store, as their -context-store names it (postgres://… when they share one); overrides -data-dir (env "+contextstore.Setting+")")
	oauthScopes := fs.String("oauth-scopes", os.Getenv("FENIX_MCP_OAUTH_SCOPES"), "scopes every token must carry, separated by spaces (env FENIX_MCP_OAUTH_SCOPES)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return exitUsage, usageError{fmt.Sprintf("unexpected arguments %q: starter mcp takes flags only", fs.Args())}
	}
	switch *elicit {
	case mcpserver.ElicitDeny, mcpserver.ElicitAllow, mcpserver.ElicitOff:
	default:
		return exitUsage, usageError{fmt.Sprintf("-elicit-approval %q: want deny, allow or off", *elicit)}
	}
	logger := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	conn, err := connect(ctx)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	contexts, err := gatewayContexts(ctx, *contextStore, *dataDir)
	if err != nil {
		return exitFailed, err
	}
	if closer, ok := contexts.(interface{ Close() }); ok {
		defer closer.Close()
	}
	g, err := mcpserver.New(ctx, mcpserver.Config{
		Client: conn.Client, TaskQueue: *taskQueue, Allow: splitList(*allow), WorkspaceRoot: *workspace,
		Profile: *profile, Conversation: *conversation, ApprovalTimeout: *approvalTimeout, ElicitApproval: *elicit, Logger: logger,
		Contexts: contexts,
	})
	if err != nil {
		return exitFailed, err
	}
	go g.KeepFresh(ctx)
	if contexts == nil {
		fmt.Fprintf(c.stderr, "fenix mcp: no context store found: tools' images, audio, resources and long texts are named, not sent (pass -data-dir with the workers' data directory, or -context-store)\n")
	}
	if *httpAddr == "" {
		fmt.Fprintf(c.stderr, "fenix mcp: serving %d tools over stdio (task queue %s)\n", len(g.Tools()), *taskQueue)
		return exitOK, g.ServeStdio(ctx, os.Stdin, os.Stdout)
	}
	token := os.Getenv("FENIX_MCP_TOKEN")
	if *tokenFile != "" {
		raw, err := os.ReadFile(*tokenFile)
		if err != nil {
			return exitFailed, fmt.Errorf("read the bearer token: %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	opts := mcpserver.HTTPOptions{Addr: *httpAddr, Token: token, AllowedOrigins: splitList(*origins), SessionTimeout: time.Hour}
	if *oauthIssuer != "" || *oauthResource != "" {
		if *oauthIssuer == "" || *oauthResource == "" {
			return exitUsage, usageError{"OAuth needs both -oauth-issuer and -oauth-resource"}
		}
		if opts.OAuth, err = mcpserver.NewOAuthResource(ctx, mcpserver.OAuthConfig{Issuer: *oauthIssuer, Resource: *oauthResource, Scopes: strings.Fields(*oauthScopes)}); err != nil {
			return exitFailed, err
		}
	}
	if _, err := g.HTTPHandler(opts); err != nil {
		return exitUsage, usageError{err.Error()}
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return exitFailed, fmt.Errorf("listen on %s: %w", *httpAddr, err)
	}
	fmt.Fprintf(c.stderr, "fenix mcp: serving %d tools at http://%s%s (HTTP+SSE clients: http://%[2]s%[4]s) (task queue %[5]s)\n", len(g.Tools()), ln.Addr(), mcpserver.Path, mcpserver.SSEPath, *taskQueue)
	return exitOK, g.ServeHTTP(ctx, ln, opts)
}

// gatewayContexts opens the workers' context store, from which the
// gateway reads the images, audio, resources and long texts tools return:
// the one spec (-context-store) or dataDir (-data-dir) names (a store that
// does not open is an error), else the default data directory's of a
// worker on this host when it has one. Nil (attachments named, not sent)
// otherwise.
func gatewayContexts(ctx context.Context, spec, dataDir string) (contextstore.Store, error) {
	if spec == "" && dataDir == "" {
		dataDir = worker.DefaultDataDir(os.Getenv)
		if st, err := os.Stat(filepath.Join(dataDir, "contexts")); err != nil || !st.IsDir() {
			return nil, nil
		}
	}
	store, err := contextstore.Open(ctx, spec, contextstore.Options{DataDir: dataDir})
	if err != nil {
		return nil, fmt.Errorf("the context store tools' attachments are read from: %w", err)
	}
	return store, nil
}
