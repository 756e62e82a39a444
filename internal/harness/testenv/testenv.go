// Package testenv is what the test packages that run Fenix against a real
// dev server share: the repository root, the built worker and starter
// binaries, the dev server itself, and a buffer a child process can write
// while a test reads it.
package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/history/verify"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/harness/logbuf"
)

// RepoRoot is the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Env is a dev server plus built commands, for one test binary.
type Env struct {
	Server  *devserver.Server
	CLIPath string
	// BinDir holds the built commands, by name.
	BinDir   string
	RepoRoot string
}

// Start finds (or builds) the Temporal CLI, starts a dev server with opts
// and builds the named commands (e.g. "worker", "starter") from ./<name>,
// each into BinDir under its last path element.
func Start(ctx context.Context, opts devserver.Options, commands ...string) (*Env, error) {
	env := &Env{RepoRoot: RepoRoot()}
	var err error
	if env.CLIPath, err = devserver.CLIPath(ctx, true, os.Stderr); err != nil {
		return nil, err
	}
	opts.CLIPath = env.CLIPath
	if env.Server, err = devserver.Start(ctx, opts); err != nil {
		return nil, err
	}
	if env.BinDir, err = os.MkdirTemp("", "fenix-bin-"); err != nil {
		env.Close()
		return nil, err
	}
	for _, name := range commands {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(env.BinDir, filepath.Base(name)), "./"+name)
		cmd.Dir = env.RepoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			env.Close()
			return nil, fmt.Errorf("build %s: %w\n%s", name, err, out)
		}
	}
	return env, nil
}

// Close stops the server and removes the built commands.
func (e *Env) Close() {
	if e.Server != nil {
		e.Server.Stop()
	}
	if e.BinDir != "" {
		os.RemoveAll(e.BinDir)
	}
}

// VerifyRuns checks with history/verify that no tool ran without an allow
// in the ExecuteAssignment and AgentTurn runs the visibility query matches
// (every run when it is empty). The error names each run, event and call.
func VerifyRuns(ctx context.Context, c client.Client, namespace, query string) error {
	sum, err := verify.Server(ctx, c, nil, namespace, query)
	if err != nil {
		return fmt.Errorf("verifying histories (%s): %w", query, err)
	}
	return sum.Err()
}

// VerifyAll checks every run the shared dev server holds, at the end of a
// test binary: a run from a test that did not check its own is caught
// here. It returns the exit code: 1 on a violation.
func (e *Env) VerifyAll(code int) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := verify.Server(ctx, e.Server.Client(), nil, e.Server.Namespace, "")
	if err == nil {
		err = sum.Err()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: no executed call without an allow:", err)
		return 1
	}
	fmt.Println("verify:", sum.Line())
	return code
}

// Buffer is a buffer safe for a process writing while a test reads.
type Buffer = logbuf.Buffer
