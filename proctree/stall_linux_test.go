package proctree

import (
	"syscall"
	"testing"
	"time"
)

func TestSomeStallTotal(t *testing.T) {
	got, err := someStallTotal([]byte("some avg10=1.00 avg60=0.50 avg300=0.10 total=2500\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=900\n"))
	if err != nil || got != 2500*time.Microsecond {
		t.Errorf("some total = %v, %v, want 2.5ms", got, err)
	}
	for _, bad := range []string{"", "full avg10=0.00 total=3\n", "some avg10=0.00 total=x\n"} {
		if _, err := someStallTotal([]byte(bad)); err == nil {
			t.Errorf("someStallTotal(%q) has no error", bad)
		}
	}
}

// GroupStalled finds this test's own process group and is runnable (the
// test is running).
func TestGroupStalledReadsItsGroup(t *testing.T) {
	held, runnable, err := GroupStalled(syscall.Getpgrp())
	if err != nil || held < 0 || !runnable {
		t.Errorf("GroupStalled(own group) = %v, %v, %v; want a figure, runnable, no error", held, runnable, err)
	}
	if _, _, err := GroupStalled(1 << 30); err == nil {
		t.Error("GroupStalled of a group with no process has no error")
	}
}
