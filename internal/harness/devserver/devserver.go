// Package devserver finds (or builds) the official Temporal CLI and starts
// its dev server on free loopback ports. Tests and the starter's demo use
// it; nothing is downloaded at run time: a missing CLI is built from the Go
// module proxy with `go install`, once, into $(go env GOPATH)/bin.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/grpc"

	"github.com/fenixrt/fenix/codec"
	"github.com/fenixrt/fenix/internal/grpcheaders"
	"github.com/fenixrt/fenix/workflows"
)

// CLIModule is the pinned Temporal CLI build.
const CLIModule = "github.com/temporalio/cli/cmd/temporal@v1.5.1"

// SearchAttributes returns Fenix's search attributes with placeholder
// values, the form DevServerOptions expects for registration.
func SearchAttributes() temporal.SearchAttributes {
	var updates []temporal.SearchAttributeUpdate
	for _, key := range workflows.SearchAttributeKeys() {
		updates = append(updates, key.ValueSet(""))
	}
	return temporal.NewSearchAttributes(updates...)
}

// CLIPath returns the Temporal CLI: $FENIX_TEMPORAL_CLI, then `temporal` on
// PATH, then $(go env GOPATH)/bin/temporal; if none exists and build is
// true, it is built there with `go install` (2-4 minutes the first time).
func CLIPath(ctx context.Context, build bool, progress io.Writer) (string, error) {
	if p := os.Getenv("FENIX_TEMPORAL_CLI"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("FENIX_TEMPORAL_CLI=%q: %w", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	goBin, err := GoBinDir(ctx)
	if err != nil {
		return "", err
	}
	target := filepath.Join(goBin, "temporal")
	if _, err := os.Stat(target); err == nil {
		return target, nil
	}
	if !build {
		return "", fmt.Errorf("temporal CLI not found (looked at $FENIX_TEMPORAL_CLI, PATH and %s); build it with: go install %s", target, CLIModule)
	}
	return target, buildCLI(ctx, goBin, target, progress)
}

// GoTool is the go command: on PATH, else under GOROOT.
func GoTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// GoBinDir is where `go install` puts commands: GOBIN, else the first
// GOPATH entry's bin. Fenix caches the Temporal binaries it builds there.
func GoBinDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, GoTool(), "env", "GOBIN", "GOPATH").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %w", err)
	}
	return binDirFromGoEnv(string(out))
}

// binDirFromGoEnv reads the output of `go env GOBIN GOPATH`: one line per
// variable, the first empty when GOBIN is unset. The lines are split
// before trimming, or an unset GOBIN would make GOPATH look like it.
func binDirFromGoEnv(out string) (string, error) {
	lines := strings.Split(out, "\n")
	if len(lines) < 2 {
		return "", fmt.Errorf("go env GOBIN GOPATH printed %q, expected two lines", out)
	}
	if gobin := strings.TrimSpace(lines[0]); gobin != "" {
		return gobin, nil
	}
	gopath := strings.TrimSpace(lines[1])
	if gopath == "" {
		return "", errors.New("go env reports neither GOBIN nor GOPATH")
	}
	return filepath.Join(strings.Split(gopath, string(os.PathListSeparator))[0], "bin"), nil
}

// buildCLI runs go install under a file lock, so parallel test binaries
// build the CLI once.
func buildCLI(ctx context.Context, goBin, target string, progress io.Writer) error {
	if err := os.MkdirAll(goBin, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(goBin, ".fenix-temporal-cli.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock for building the temporal CLI: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(target); err == nil {
		return nil
	}
	if progress != nil {
		fmt.Fprintf(progress, "building the Temporal CLI (go install %s); this takes a few minutes the first time...\n", CLIModule)
	}
	cmd := exec.CommandContext(ctx, GoTool(), "install", CLIModule)
	cmd.Env = append(os.Environ(), "GOBIN="+goBin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go install %s: %w\n%s", CLIModule, err, out)
	}
	return nil
}

// DynamicConfig is the dynamic configuration every dev server Fenix starts
// (demo, tests, bench) runs with, as "key=value" pairs:
//
//   - system.enableActivityEagerExecution lets a worker that schedules an
//     activity on its own task queue run it at once, without a round trip
//     through matching (off by default in server 1.29);
//   - history.transferProcessorMaxPollRPS (default 20) rate-limits how often
//     the history service reads its transfer queue, which is how every new
//     workflow or activity task reaches matching. One chain of tasks (a run
//     whose next task waits for the previous one) therefore moved at ~50 ms
//     a task once its burst was spent: 10 no-op activities back to back took
//     1.05 s; with the limit raised they take ~150 ms.
//   - matching.numTaskqueue{Read,Write}Partitions (default 4): a task
//     written to a partition where no poller waits is forwarded to the
//     root partition, and now and then sat there for 2 s (about 1% of
//     calculator calls back to back); one worker's few pollers do not need
//     partitions. A fleet that polls hard enough to need them does not
//     see the stall, because every partition has pollers.
//   - system.forceSearchAttributesCacheRefreshOnRead, which the CLI turns
//     on so attributes created while it runs are usable at once, makes
//     every workflow start and search-attribute upsert query the cluster
//     metadata: 6 ms of a 19 ms no-activity workflow, 12 ms of a 32 ms
//     calculator call. Fenix's attributes are registered when the server
//     starts, before the history service first reads them.
var DynamicConfig = []string{
	"system.enableActivityEagerExecution=true",
	"history.transferProcessorMaxPollRPS=10000",
	"matching.numTaskqueueReadPartitions=1",
	"matching.numTaskqueueWritePartitions=1",
	"system.forceSearchAttributesCacheRefreshOnRead=false",
}

// DynamicConfigArgs renders DynamicConfig as dev-server flags.
func DynamicConfigArgs() []string {
	var args []string
	for _, kv := range DynamicConfig {
		args = append(args, "--dynamic-config-value", kv)
	}
	return args
}

// Options configure a dev server.
type Options struct {
	CLIPath string
	// EnableUI starts the embedded Web UI on a free port.
	EnableUI bool
	// DBFilename makes the server persistent (survives restarts).
	DBFilename string
	// HostPort fixes the frontend address (default: a free loopback port).
	HostPort string
	// UIPort fixes the Web UI port.
	UIPort    string
	Namespace string
	Output    io.Writer
	// ExtraArgs are passed to `temporal server start-dev` after
	// DynamicConfigArgs, unless StockConfig is set.
	ExtraArgs []string
	// StockConfig starts the server without DynamicConfig, as the CLI
	// ships: for benchmarks that compare against the defaults.
	StockConfig bool
}

// Server is a running dev server.
type Server struct {
	*testsuite.DevServer
	HostPort  string
	UIURL     string
	Namespace string
}

// Start starts a dev server with Fenix's search attributes registered.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.HostPort == "" {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		o.HostPort = "127.0.0.1:" + strconv.Itoa(port)
	}
	uiURL := ""
	if o.EnableUI {
		if o.UIPort == "" {
			port, err := FreePort()
			if err != nil {
				return nil, err
			}
			o.UIPort = strconv.Itoa(port)
		}
		uiURL = "http://127.0.0.1:" + o.UIPort
	}
	out := o.Output
	if out == nil {
		out = io.Discard
	}
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath: o.CLIPath,
		ClientOptions: &client.Options{HostPort: o.HostPort, Namespace: o.Namespace, Logger: quietLogger{}, DataConverter: codec.NewDataConverter(nil),
			ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpcheaders.DialOption()}}},
		EnableUI:         o.EnableUI,
		UIPort:           o.UIPort,
		DBFilename:       o.DBFilename,
		LogLevel:         "error",
		SearchAttributes: SearchAttributes(),
		ExtraArgs:        serverArgs(o),
		Stdout:           out,
		Stderr:           out,
	})
	if err != nil {
		return nil, fmt.Errorf("start Temporal dev server (%s) on %s: %w", o.CLIPath, o.HostPort, err)
	}
	return &Server{DevServer: srv, HostPort: o.HostPort, UIURL: uiURL, Namespace: o.Namespace}, nil
}

func serverArgs(o Options) []string {
	if o.StockConfig {
		return o.ExtraArgs
	}
	return append(DynamicConfigArgs(), o.ExtraArgs...)
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitReachable waits until addr accepts TCP connections.
func WaitReachable(ctx context.Context, addr string) error {
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not reachable: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// quietLogger drops the SDK client's logs during server start.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
