// Package cluster runs Fenix in its production shape without Docker: the
// Temporal server built from the Go module proxy (internal/harness/prodserver) on
// PostgreSQL, set up by the repository's own deploy/ scripts and dynamic
// config exactly as docker-compose.yml runs them, and Fenix workers as
// separate "hosts", each in its own Linux network namespace with its own
// address, data directory and host ID. The server and PostgreSQL stay in
// the root namespace; a host reaches them over its veth link only, so
// cutting the link partitions the host.
//
// It needs root, the ip command (iproute2) and a PostgreSQL role that may
// create databases. Every cluster gets fresh databases, dropped on Close,
// and leftovers of a crashed run are removed by the next Start.
package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/harness/prodserver"
	"github.com/fenixrt/fenix/internal/pki"
)

// namePrefix starts every namespace ("fenixcl-<pid>-...") and database
// ("fenixcl_<pid>_...") a cluster creates; the pid finds leftovers.
const namePrefix = "fenixcl"

var clusterSeq atomic.Int32

// Config configures Start.
type Config struct {
	RepoRoot string
	// PostgresDSN reaches PostgreSQL with a role that may create databases.
	PostgresDSN string
	// WorkerBinary is the built ./worker command the hosts run.
	WorkerBinary string
	// Dir receives the server's root and every log (server.log,
	// setup-schema.log, init-namespace.log, host-<name>.log).
	Dir string
	// Progress receives one line per step (nil: discarded).
	Progress io.Writer
}

// Cluster is a running production-shaped cluster.
type Cluster struct {
	cfg      Config
	ID       string
	Compose  ComposeSpec
	Binaries prodserver.Binaries
	Server   *prodserver.Server
	PG       *Postgres
	// FrontendPort is the frontend's gRPC port on every address (the
	// server binds 0.0.0.0 as in docker-compose.yml); Frontend is its
	// loopback address, for clients in the root namespace.
	FrontendPort int
	Frontend     string
	// FrontendHTTPPort is the frontend's HTTP API port, on every address.
	FrontendHTTPPort int
	// CLI is the temporal CLI the init job runs.
	CLI       string
	Namespace string
	// TLSDir holds the certificates the stack's certs job would issue
	// (internal/pki), in place of docker-compose.yml's ./deploy/tls: the
	// frontend and internode traffic require them, as in the stack.
	TLSDir string
	// Databases: Temporal's two and Fenix's (audit log and context store).
	TemporalDB, VisibilityDB, FenixDB string

	mu    sync.Mutex
	hosts []*Host
}

// Start sets the cluster up the way `docker compose up` does: databases
// and schema (deploy/temporal/setup-schema.sh), the server with
// deploy/temporal/dynamicconfig, then namespace and search attributes
// (deploy/temporal/init-namespace.sh). Hosts are added with AddHost.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if err := CheckNetNS(ctx); err != nil {
		return nil, err
	}
	spec, err := LoadCompose(ctx, cfg.RepoRoot)
	if err != nil {
		return nil, err
	}
	pg, err := OpenPostgres(ctx, cfg.PostgresDSN)
	if err != nil {
		return nil, err
	}
	removeLeftovers(ctx, pg, cfg.Progress)

	started := time.Now()
	bins, err := prodserver.Find(ctx, true, cfg.Progress)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Progress, "cluster: temporal server %s ready in %s (%s)\n", prodserver.Version, time.Since(started).Round(time.Millisecond), bins.Dir)
	cli, err := devserver.CLIPath(ctx, true, cfg.Progress)
	if err != nil {
		return nil, err
	}

	id := fmt.Sprintf("%d_%d", os.Getpid(), clusterSeq.Add(1))
	c = &Cluster{
		cfg: cfg, ID: id, Compose: spec, Binaries: bins, PG: pg,
		TemporalDB:   fmt.Sprintf("%s_%s_temporal", namePrefix, id),
		VisibilityDB: fmt.Sprintf("%s_%s_visibility", namePrefix, id),
		FenixDB:      fmt.Sprintf("%s_%s_fenix", namePrefix, id),
		Namespace:    spec.InitEnv["TEMPORAL_NAMESPACE"],
		CLI:          cli,
	}
	defer func() {
		if err != nil {
			c.Close()
			c = nil
		}
	}()
	c.TLSDir = filepath.Join(cfg.Dir, "tls")
	if _, err = pki.Ensure(pki.Options{Dir: c.TLSDir}); err != nil {
		return c, err
	}
	operatorTLS, err := c.OperatorTLS()
	if err != nil {
		return c, err
	}
	if err = pg.CreateDatabase(ctx, c.FenixDB); err != nil {
		return c, fmt.Errorf("create the Fenix database: %w", err)
	}

	step := time.Now()
	if err = c.runScript(ctx, spec.SchemaScript, c.schemaEnv(), "setup-schema.log"); err != nil {
		return c, err
	}
	fmt.Fprintf(cfg.Progress, "cluster: schema set up in %s by %s\n", time.Since(step).Round(time.Millisecond), rel(cfg.RepoRoot, spec.SchemaScript))

	serverEnv, err := c.serverEnv()
	if err != nil {
		return c, err
	}
	serverLog, err := os.Create(filepath.Join(cfg.Dir, "server.log"))
	if err != nil {
		return c, err
	}
	step = time.Now()
	c.Server, err = prodserver.Start(ctx, prodserver.Options{
		Binaries: bins, Env: serverEnv, Dir: filepath.Join(cfg.Dir, "server"),
		Frontend: c.Frontend, FrontendTLS: operatorTLS, Output: serverLog,
	})
	if err != nil {
		return c, fmt.Errorf("%w (log: %s)", err, serverLog.Name())
	}
	fmt.Fprintf(cfg.Progress, "cluster: temporal-server %s healthy on %s in %s with %s\n", prodserver.Version, c.Frontend, time.Since(step).Round(time.Millisecond), rel(cfg.RepoRoot, serverEnv["DYNAMIC_CONFIG_FILE_PATH"]))

	step = time.Now()
	initEnv := c.withClusterTLS(spec.InitEnv)
	initEnv["TEMPORAL_ADDRESS"] = c.Frontend
	initEnv["PATH"] = filepath.Dir(cli) + string(os.PathListSeparator) + os.Getenv("PATH")
	initEnv["INIT_MAX_TRIES"] = "30"
	if err = c.runScript(ctx, spec.InitScript, initEnv, "init-namespace.log"); err != nil {
		return c, err
	}
	fmt.Fprintf(cfg.Progress, "cluster: namespace %q and search attributes ready in %s by %s\n", c.Namespace, time.Since(step).Round(time.Millisecond), rel(cfg.RepoRoot, spec.InitScript))
	return c, nil
}

// serverEnv is the compose temporal service's environment with what a
// machine shared with other processes must change: PostgreSQL's address
// and role, this cluster's databases, free ports, and a broadcast address
// (the container would use its own IP).
func (c *Cluster) serverEnv() (map[string]string, error) {
	env := c.withClusterTLS(c.Compose.ServerEnv)
	env["POSTGRES_SEEDS"] = c.PG.Host
	env["DB_PORT"] = strconv.Itoa(c.PG.Port)
	env["POSTGRES_USER"] = c.PG.User
	env["POSTGRES_PWD"] = c.PG.Password
	env["DBNAME"] = c.TemporalDB
	env["VISIBILITY_DBNAME"] = c.VisibilityDB
	env["TEMPORAL_BROADCAST_ADDRESS"] = "127.0.0.1"
	for _, key := range []string{
		"FRONTEND_GRPC_PORT", "FRONTEND_HTTP_PORT", "FRONTEND_MEMBERSHIP_PORT",
		"HISTORY_GRPC_PORT", "HISTORY_MEMBERSHIP_PORT",
		"MATCHING_GRPC_PORT", "MATCHING_MEMBERSHIP_PORT",
		"WORKER_GRPC_PORT", "WORKER_MEMBERSHIP_PORT",
	} {
		port, err := freeServerPort(env)
		if err != nil {
			return nil, err
		}
		env[key] = strconv.Itoa(port)
	}
	c.FrontendPort, _ = strconv.Atoi(env["FRONTEND_GRPC_PORT"])
	c.FrontendHTTPPort, _ = strconv.Atoi(env["FRONTEND_HTTP_PORT"])
	c.Frontend = net.JoinHostPort("127.0.0.1", env["FRONTEND_GRPC_PORT"])
	return env, nil
}

// freeServerPort finds a port free on every address, below the kernel's
// ephemeral range: Temporal stores membership ports as a PostgreSQL
// smallint (at most 32767), and outgoing connections never take these.
func freeServerPort(taken map[string]string) (int, error) {
	used := map[string]bool{}
	for _, v := range taken {
		used[v] = true
	}
	base := 20000 + rand.IntN(10000)
	for i := range 2000 {
		port := 20000 + (base-20000+i*7)%12000
		if used[strconv.Itoa(port)] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		ln.Close()
		return port, nil
	}
	return 0, errors.New("no free TCP port between 20000 and 32000 for the Temporal server")
}

// schemaEnv is the compose temporal-schema job's environment, pointed at
// this cluster's databases, with the built temporal-sql-tool on PATH and
// the release's schema directory.
func (c *Cluster) schemaEnv() map[string]string {
	env := map[string]string{}
	for k, v := range c.Compose.SchemaEnv {
		env[k] = v
	}
	env["POSTGRES_SEEDS"] = c.PG.Host
	env["DB_PORT"] = strconv.Itoa(c.PG.Port)
	env["POSTGRES_USER"] = c.PG.User
	env["SQL_PASSWORD"] = c.PG.Password
	env["DBNAME"] = c.TemporalDB
	env["VISIBILITY_DBNAME"] = c.VisibilityDB
	env["SCHEMA_DIR"] = c.Binaries.PostgresSchemaDir()
	env["PATH"] = c.Binaries.Dir + string(os.PathListSeparator) + os.Getenv("PATH")
	return env
}

// runScript runs a deploy/ script with sh, as its compose job does, with
// exactly env (plus HOME), logging to logName in the cluster directory.
func (c *Cluster) runScript(ctx context.Context, script string, env map[string]string, logName string) error {
	log, err := os.Create(filepath.Join(c.cfg.Dir, logName))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, "/bin/sh", script)
	cmd.Env = []string{"HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		body, _ := os.ReadFile(log.Name())
		return fmt.Errorf("%s: %w\n%s", script, err, tailString(string(body), 3000))
	}
	return nil
}

// withClusterTLS copies env with its certificate paths moved from the
// compose stack's directory to the cluster's.
func (c *Cluster) withClusterTLS(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		if rest, ok := strings.CutPrefix(v, c.Compose.TLSDir+"/"); ok {
			v = filepath.Join(c.TLSDir, rest)
		}
		out[k] = v
	}
	return out
}

// OperatorTLS is the client TLS of the operator's certificate (the
// starter's and the init job's in the stack), for clients the tests dial.
func (c *Cluster) OperatorTLS() (*tls.Config, error) {
	return pki.ClientTLS(filepath.Join(c.TLSDir, "operator"), "temporal")
}

// FenixDSN is the Fenix database (audit log, context store) as seen from
// the root namespace.
func (c *Cluster) FenixDSN() string { return c.PG.DSN(c.FenixDB, "") }

// Hosts are the hosts added so far.
func (c *Cluster) Hosts() []*Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Host(nil), c.hosts...)
}

// RestartServer stops the server process (SIGKILL when kill is true, else
// SIGTERM) and starts it again on the same databases and ports. It
// returns how long the frontend was unavailable.
func (c *Cluster) RestartServer(ctx context.Context, kill bool) (time.Duration, error) {
	down := time.Now()
	if kill {
		c.Server.Kill()
	} else if err := c.Server.Stop(30 * time.Second); err != nil {
		return 0, err
	}
	err := c.Server.Restart(ctx)
	return time.Since(down), err
}

// Close stops the hosts and the server, deletes the namespaces and drops
// the databases. It reports nothing: cleanup failures are left for the
// next Start's leftover sweep.
func (c *Cluster) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, h := range c.Hosts() {
		h.close(ctx)
	}
	if c.Server != nil {
		_ = c.Server.Stop(10 * time.Second)
	}
	_ = c.PG.DropDatabases(ctx, c.TemporalDB, c.VisibilityDB, c.FenixDB)
}

// removeLeftovers deletes namespaces and databases of clusters whose
// process is gone (a test binary killed before its cleanup ran).
func removeLeftovers(ctx context.Context, pg *Postgres, progress io.Writer) {
	for _, ns := range staleNetNS(ctx, namePrefix+"-") {
		if err := ipCmd(ctx, "netns", "delete", ns); err == nil {
			fmt.Fprintf(progress, "cluster: removed leftover network namespace %s\n", ns)
		}
	}
	dbs, err := pg.DatabasesWithPrefix(ctx, namePrefix+"_")
	if err != nil {
		return
	}
	for _, db := range dbs {
		if owner, ok := ownerPID(db, namePrefix+"_", "_"); ok && !processAlive(owner) {
			if err := pg.DropDatabases(ctx, db); err == nil {
				fmt.Fprintf(progress, "cluster: dropped leftover database %s\n", db)
			}
		}
	}
}

// ownerPID reads the pid from "<prefix><pid><sep>...".
func ownerPID(name, prefix, sep string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	pidText, _, _ := strings.Cut(rest, sep)
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil && pid > 0
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
