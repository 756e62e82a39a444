package browser

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/proctree"
)

// Chromium and every helper it starts run in the session's cgroup, to
// which the manager's fence is attached before Chromium starts: a
// process there cannot connect to a fenced endpoint (the Temporal
// frontend, should a connection ever leave Chromium without the guard
// proxy), while the worker can; closing the session kills them all and
// removes the cgroup.
func TestSessionRunsInAFencedCgroup(t *testing.T) {
	if proctree.Parent() == "" {
		t.Skip("no writable cgroup v2 here")
	}
	exe, err := FindChromium()
	if err != nil {
		t.Skipf("browser tests need Chromium: %v", err)
	}
	frontend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer frontend.Close()
	go func() {
		for {
			c, err := frontend.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := uint16(frontend.Addr().(*net.TCPAddr).Port)
	fence, err := confine.NewFence([]confine.Endpoint{{Prefix: netip.MustParsePrefix("127.0.0.0/8"), Port: port}})
	if err != nil {
		t.Skipf("no fence here: %v", err)
	}
	defer fence.Close()
	m, err := NewManager(Config{Dir: t.TempDir(), ExecPath: exe, Guard: Guard{Policy: loopbackPolicy()}, IdleTimeout: time.Minute,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Fence: fence.Apply})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Shutdown)
	s, err := m.Open(context.Background(), OpenSpec{ID: "brw_test_0000000000000042"})
	if err != nil {
		t.Fatal(err)
	}
	if s.cgroup == nil {
		t.Fatal("the session has no cgroup although one can be made here")
	}
	dir := s.cgroup.Dir()
	pids := ProcessesUsingProfile(s.Info().Profile)
	if len(pids) < 2 {
		t.Fatalf("Chromium runs %d processes, want the browser and its helpers", len(pids))
	}
	for _, pid := range pids {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
		if err == nil && !strings.Contains(string(raw), "/"+filepath.Base(dir)+"\n") {
			t.Errorf("Chromium process %d is not in the session's cgroup %s: %s", pid, dir, raw)
		}
	}

	probe := exec.Command("bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+strconv.Itoa(int(port)))
	probe.SysProcAttr = &syscall.SysProcAttr{}
	s.cgroup.Attach(probe.SysProcAttr)
	out, err := probe.CombinedOutput()
	if err == nil || !strings.Contains(strings.ToLower(string(out)), "operation not permitted") {
		t.Errorf("a process in the session's cgroup connected to the fenced endpoint (err %v): %s", err, out)
	}
	if c, err := net.Dial("tcp", frontend.Addr().String()); err != nil {
		t.Errorf("the worker itself cannot reach the endpoint: %v", err)
	} else {
		c.Close()
	}

	if _, err := m.Close(s.ID(), ReasonClosed); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err := os.Stat(dir)
		if os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session's cgroup %s is still there after it closed: %v", dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if left := ProcessesUsingProfile(s.Info().Profile); len(left) > 0 {
		t.Errorf("Chromium processes outlived the session: %v", left)
	}
}
