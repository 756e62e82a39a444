// Package prodserver builds and runs the production Temporal server — the
// temporal-server binary of the temporalio/server image, not the CLI's dev
// server — from the Go module proxy, so the production shape runs on
// machines without Docker. Nothing is downloaded at run time but Go
// modules: the binaries are built once with `go install` and cached
// outside the repository, like internal/harness/devserver caches the CLI.
package prodserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/fenixrt/fenix/internal/harness/devserver"
)

// Version is the server release Fenix runs in production and tests: the
// one the pinned CLI embeds, and the temporalio/server image tag in
// docker-compose.yml.
const Version = "1.29.1"

// Module is the server's Go module.
const Module = "go.temporal.io/server"

// The binaries, named as in the temporalio/server and admin-tools images.
const (
	ServerBinary  = "temporal-server"
	SQLToolBinary = "temporal-sql-tool"
)

// packages maps each `go install` package to the name the images give it.
var packages = []struct{ pkg, installs, name string }{
	{Module + "/cmd/server", "server", ServerBinary},
	{Module + "/cmd/tools/sql", "sql", SQLToolBinary},
}

// Binaries are a built server release.
type Binaries struct {
	// Dir holds temporal-server and temporal-sql-tool; put it on PATH for
	// scripts written for the images (deploy/temporal/setup-schema.sh).
	Dir     string
	Server  string
	SQLTool string
	// ModuleDir is the release's source in the module cache: the image's
	// config template (docker/config_template.yaml) and the SQL schemas.
	ModuleDir string
}

// ConfigTemplate is the template the temporalio/server image renders into
// its config at start (see RenderConfig).
func (b Binaries) ConfigTemplate() string {
	return filepath.Join(b.ModuleDir, "docker", "config_template.yaml")
}

// PostgresSchemaDir is the PostgreSQL schema directory, the admin-tools
// image's /etc/temporal/schema/postgresql/v12.
func (b Binaries) PostgresSchemaDir() string {
	return filepath.Join(b.ModuleDir, "schema", "postgresql", "v12")
}

// CacheDir is where the binaries are kept: $FENIX_TEMPORAL_SERVER_DIR, else
// temporal-server-v<Version> in $(go env GOBIN), else in $(go env GOPATH)/bin.
func CacheDir(ctx context.Context) (string, error) {
	if d := os.Getenv("FENIX_TEMPORAL_SERVER_DIR"); d != "" {
		return d, nil
	}
	goBin, err := devserver.GoBinDir(ctx)
	if err != nil {
		return "", err
	}
	return filepath.Join(goBin, "temporal-server-v"+Version), nil
}

// Find returns the cached binaries. When they are missing and build is
// true they are built (about five minutes on two cores the first time; a
// warm Go build cache makes it one or two); otherwise the error says how
// to build them.
func Find(ctx context.Context, build bool, progress io.Writer) (Binaries, error) {
	dir, err := CacheDir(ctx)
	if err != nil {
		return Binaries{}, err
	}
	b := Binaries{Dir: dir, Server: filepath.Join(dir, ServerBinary), SQLTool: filepath.Join(dir, SQLToolBinary)}
	if !complete(b) {
		if !build {
			return Binaries{}, fmt.Errorf("temporal server %s not built in %s; build it with: go run ./internal/prodserver/cmd/build (or set FENIX_TEMPORAL_SERVER_DIR)", Version, dir)
		}
		if err := buildLocked(ctx, b, progress); err != nil {
			return Binaries{}, err
		}
	}
	if b.ModuleDir, err = moduleDir(ctx); err != nil {
		return Binaries{}, err
	}
	return b, nil
}

func complete(b Binaries) bool {
	for _, p := range []string{b.Server, b.SQLTool} {
		if info, err := os.Stat(p); err != nil || info.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// buildLocked builds under a file lock beside the cache directory, so
// parallel test binaries (and CI's pre-build) build the release once.
func buildLocked(ctx context.Context, b Binaries, progress io.Writer) error {
	parent := filepath.Dir(b.Dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(b.Dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock for building the temporal server: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if complete(b) {
		return nil
	}
	if progress != nil {
		fmt.Fprintf(progress, "building the Temporal server %s (go install %s/cmd/server and cmd/tools/sql) into %s; this takes a few minutes the first time...\n", Version, Module, b.Dir)
	}
	// Built into a fresh directory and renamed into place, so a build cut
	// short never leaves a half-populated cache that looks complete.
	staging, err := os.MkdirTemp(parent, ".temporal-server-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	args := []string{"install"}
	for _, p := range packages {
		args = append(args, p.pkg+"@v"+Version)
	}
	cmd := exec.CommandContext(ctx, devserver.GoTool(), args...)
	cmd.Env = append(os.Environ(), "GOBIN="+staging)
	// Outside any module, so the repository's go.mod plays no part.
	cmd.Dir = os.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %w\n%s", args, err, out)
	}
	for _, p := range packages {
		if err := os.Rename(filepath.Join(staging, p.installs), filepath.Join(staging, p.name)); err != nil {
			return fmt.Errorf("go install built no %s: %w", p.installs, err)
		}
	}
	if err := os.RemoveAll(b.Dir); err != nil {
		return err
	}
	return os.Rename(staging, b.Dir)
}

// moduleDir locates the release's source in the module cache (downloading
// the module through the proxy if the cache lacks it).
func moduleDir(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, devserver.GoTool(), "mod", "download", "-json", Module+"@v"+Version)
	cmd.Dir = os.TempDir()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@v%s: %w", Module, Version, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download %s@v%s printed %q: %w", Module, Version, out, err)
	}
	if info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@v%s: %s", Module, Version, info.Error)
	}
	return info.Dir, nil
}
