//go:build linux

package procs

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

// A worker out of file descriptors is named as the cause of a start that
// failed, whichever step met the limit: here the start's pipes, with the
// soft limit lowered to what is open now plus two.
func TestAStartOutOfDescriptorsSaysSo(t *testing.T) {
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		t.Fatal(err)
	}
	open, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	low := limit
	low.Cur = uint64(len(open) + 2)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	p, startErr := Start(Spec{CommandLine: "true", Env: testEnv(), Dir: dir})
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		t.Fatal(err)
	}
	if startErr == nil {
		p.Kill(ReasonStopped)
		<-p.Done()
		t.Fatal("the command started with two descriptors to spare")
	}
	why := Exhausted(startErr)
	if !strings.Contains(why, "EMFILE") || !strings.Contains(why, "LimitNOFILE") {
		t.Fatalf("Exhausted(%v) = %q, want the worker's open-file limit named", startErr, why)
	}
	if got := Exhausted(os.ErrNotExist); got != "" {
		t.Fatalf("Exhausted(ErrNotExist) = %q, want nothing", got)
	}
}
