package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/agent/llm/providers"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// cmdDemo is the README's first command: everything needed to see Fenix
// work on a machine with only Go installed.
func cmdDemo(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	file := fs.String("file", filepath.Join("examples", "calculator.json"), "assignment to run")
	exit := fs.Bool("exit", false, "stop the dev server and worker after printing the result")
	port := fs.Int("port", 7233, "dev server frontend port (a free port is used if it is taken)")
	uiPort := fs.Int("ui-port", 8233, "Web UI port (a free port is used if it is taken)")
	workspace := fs.String("workspace", filepath.Join("examples", "workspace"), "default workspace root for the worker")
	skillsDir := fs.String("skills-dir", filepath.Join("examples", "skills"), "skill roots (system/, curated/, installed/) for the worker")
	scriptFile := fs.String("script-file", envOr(providers.EnvScriptFile, filepath.Join("examples", "agent_scripts.json")), "scripted model turns for AgentTurn (env FENIX_SCRIPT_FILE)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err.Error()}
	}
	began := time.Now()

	cliPath, err := devserver.CLIPath(ctx, true, c.stderr)
	if err != nil {
		return exitFailed, err
	}
	hostPort := fmt.Sprintf("127.0.0.1:%d", portOrFree(*port))
	srv, err := devserver.Start(ctx, devserver.Options{
		CLIPath:  cliPath,
		EnableUI: true,
		HostPort: hostPort,
		UIPort:   fmt.Sprint(portOrFree(*uiPort)),
	})
	if err != nil {
		return exitFailed, err
	}
	defer srv.Stop()
	fmt.Fprintf(c.stdout, "Temporal dev server at %s, Web UI at %s\n", srv.HostPort, srv.UIURL)

	// The dev server has no client authentication: the agent's commands
	// and hooks must not reach it, nor the Web UI that fronts it.
	unreachable := []string{srv.HostPort, strings.TrimPrefix(srv.UIURL, "http://")}
	ws, cleanup, err := startDemoWorker(srv.Client(), c.stderr, *workspace, *skillsDir, *scriptFile, unreachable)
	if err != nil {
		return exitFailed, err
	}
	defer cleanup()
	fmt.Fprintf(c.stdout, "Fenix worker polling task queue %q (workspace %s)\n\n", workflows.DefaultTaskQueue, ws)

	// The sample runs through the same path a user's `starter run` takes.
	os.Setenv("TEMPORAL_ADDRESS", srv.HostPort)
	os.Setenv("TEMPORAL_NAMESPACE", srv.Namespace)
	os.Setenv("FENIX_UI_URL", srv.UIURL)
	code, err := cmdRun(ctx, c, []string{*file})
	if err != nil {
		return code, err
	}
	fmt.Fprintf(c.stdout, "\nDemo finished in %s.\n", time.Since(began).Round(100*time.Millisecond))
	if *exit {
		return code, nil
	}
	fmt.Fprintf(c.stdout, `The dev server and worker keep running so you can open the Web UI link above.
In another shell, try:
  TEMPORAL_ADDRESS=%[1]s go run ./starter run examples/workspace_read.json
  TEMPORAL_ADDRESS=%[1]s go run ./starter agent examples/agent_turn.json
  TEMPORAL_ADDRESS=%[1]s %[2]s workflow execute --type ExecuteAssignment --task-queue fenix --input-file examples/calculator.json
Press Ctrl-C to stop.
`, srv.HostPort, cliPath)
	<-ctx.Done()
	return code, nil
}

// startDemoWorker runs a worker in this process on a temporary data
// directory, with the scripted model; cleanup stops it and removes the
// directory.
func startDemoWorker(c client.Client, stderr io.Writer, workspace, skillsDir, scriptFile string, unreachable []string) (ws string, cleanup func(), err error) {
	dataDir, err := os.MkdirTemp("", "fenix-demo-")
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dataDir)
		}
	}()
	if ws, err = filepath.Abs(workspace); err != nil {
		return "", nil, err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	model, err := providers.FromEnv(func(key string) string {
		if key == providers.EnvScriptFile {
			return scriptFile
		}
		return os.Getenv(key)
	})
	if err != nil {
		return "", nil, err
	}
	w, err := worker.New(c, worker.Config{
		TaskQueue: workflows.DefaultTaskQueue, DataDir: dataDir, DefaultWorkspaceRoot: ws, Logger: logger, SkillsDir: skillsDir,
		Model: model, HostConfig: tools.HostConfig{Unreachable: unreachable},
	})
	if err != nil {
		return "", nil, err
	}
	if err = w.Start(); err != nil {
		return "", nil, err
	}
	return ws, func() { w.Stop(); os.RemoveAll(dataDir) }, nil
}

// portOrFree returns port when it can be bound on loopback, else a free one.
func portOrFree(port int) int {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err == nil {
		l.Close()
		return port
	}
	free, err := devserver.FreePort()
	if err != nil {
		return port
	}
	return free
}
