package worker

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const hardenHelperEnv = "FENIX_HARDEN_HELPER"

// TestCommandsCannotReadTheWorkersEnvironment runs a stand-in worker as an
// unprivileged user with a secret in its environment; its child, the same
// user, reads /proc/$PPID/environ as an agent's command would. The
// secret must be readable before the worker hides itself and not after,
// so the test shows the hiding is what refuses it.
func TestCommandsCannotReadTheWorkersEnvironment(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the stand-in worker as another user")
	}
	bin := copyTestBinaryForOthers(t)
	for _, tc := range []struct {
		hide, wantSecret bool
	}{{hide: false, wantSecret: true}, {hide: true, wantSecret: false}} {
		cmd := exec.Command(bin, "-test.run=^TestHardenHelper$")
		mode := "plain"
		if tc.hide {
			mode = "hide"
		}
		cmd.Env = []string{hardenHelperEnv + "=" + mode, "FENIX_TEST_SECRET=worker-secret-value", "PATH=/usr/bin:/bin"}
		cmd.Dir = filepath.Dir(bin)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("stand-in worker (%s): %v\n%s", mode, err, out)
		}
		if got := strings.Contains(string(out), "worker-secret-value"); got != tc.wantSecret {
			t.Errorf("%s worker: child read the secret = %v, want %v; output:\n%s", mode, got, tc.wantSecret, out)
		}
	}
}

// TestHardenHelper is the stand-in worker: not a test on its own.
func TestHardenHelper(t *testing.T) {
	mode := os.Getenv(hardenHelperEnv)
	if mode == "" {
		t.Skip("run by TestCommandsCannotReadTheWorkersEnvironment")
	}
	if mode == "hide" {
		if err := hideProcessFromSameUser(); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := exec.Command("/bin/sh", "-c", `cat /proc/$PPID/environ | tr '\0' '\n' 2>&1`).CombinedOutput()
	os.Stdout.Write(out)
}

// copyTestBinaryForOthers copies the test binary where an unprivileged user
// can run it: the build directory is the building user's alone.
func copyTestBinaryForOthers(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "fenix-harden-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "worker.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}
