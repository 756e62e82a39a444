// Package npm installs pinned npm packages for tests and benchmarks,
// once, into a cache outside the repository: $(go env GOPATH)/../fenix-npm/
// <name>, or <FENIX_NPM_CACHE>/<name>. Test processes running at once
// take turns through a lock file; .ci/run installs the same pins ahead of
// time.
package npm

import (
	"context"
	"encoding/json"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Dir is where the packages cached under name are installed.
func Dir(name string) string {
	if d := os.Getenv("FENIX_NPM_CACHE"); d != "" {
		return filepath.Join(d, name)
	}
	gopath := build.Default.GOPATH
	if i := strings.IndexByte(gopath, os.PathListSeparator); i >= 0 {
		gopath = gopath[:i]
	}
	return filepath.Join(filepath.Dir(gopath), "fenix-npm", name)
}

// Install installs packages ("name@version", pinned) into Dir(name)
// unless they are there at those versions, and returns the directory.
func Install(ctx context.Context, name string, packages ...string) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not installed: %w", err)
	}
	dir := Dir(name)
	if Installed(dir, packages...) {
		return dir, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm is not installed: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if Installed(dir, packages...) {
		return dir, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"fenix-npm-`+name+`","private":true}`+"\n"), 0o644); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, append([]string{"install", "--no-audit", "--no-fund", "--save-exact"}, packages...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install %s in %s: %v: %s", strings.Join(packages, " "), dir, err, Tail(out))
	}
	if !Installed(dir, packages...) {
		return "", fmt.Errorf("npm install %s in %s finished, but not every package is there at its version", strings.Join(packages, " "), dir)
	}
	return dir, nil
}

// Installed reports whether every package is in dir's node_modules at
// its pinned version.
func Installed(dir string, packages ...string) bool {
	for _, spec := range packages {
		at := strings.LastIndex(spec, "@")
		if at <= 0 {
			return false
		}
		raw, err := os.ReadFile(filepath.Join(dir, "node_modules", spec[:at], "package.json"))
		if err != nil {
			return false
		}
		var pkg struct{ Version string }
		if json.Unmarshal(raw, &pkg) != nil || pkg.Version != spec[at+1:] {
			return false
		}
	}
	return true
}

// Tail is the end of a command's output, for an error.
func Tail(out []byte) string {
	if len(out) > 2000 {
		out = out[len(out)-2000:]
	}
	return strings.TrimSpace(string(out))
}
