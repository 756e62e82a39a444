// Package testenv is what the test packages that run Fenix against a real
// dev server share: the repository root, the built worker and starter
// binaries, the dev server itself, and a buffer a child process can write
// while a test reads it.
package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/fenixrt/fenix/internal/harness/devserver"
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

// Buffer is a bytes.Buffer safe for a process writing while a test reads.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
