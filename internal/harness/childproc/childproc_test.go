package childproc

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStopEndsAProcessThatHonoursSIGTERM(t *testing.T) {
	p, err := Start(exec.Command("sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Running() || p.Err() != nil {
		t.Fatalf("running %v, err %v right after start", p.Running(), p.Err())
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if p.Running() {
		t.Fatal("still running after Stop")
	}
	if p.Err() == nil || !strings.Contains(p.Err().Error(), "terminated") {
		t.Errorf("exit error %v, want the SIGTERM that ended it", p.Err())
	}
}

func TestStopKillsTheGroupOfAProcessThatIgnoresSIGTERM(t *testing.T) {
	// The shell ignores TERM and leaves a child in its group.
	cmd := exec.Command("sh", "-c", `trap "" TERM; sleep 30 & echo $!; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	var child int
	for _, c := range strings.TrimSpace(string(buf[:n])) {
		child = child*10 + int(c-'0')
	}
	err = p.Stop(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop = %v, want a kill after the grace period", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(child, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("child %d of the group survived the kill", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
