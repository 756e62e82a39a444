package confine

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A root command reads a disk beneath every file's permissions, so raw
// disk and memory nodes are hidden — also one attached after the worker
// started: the rules are cut around the nodes there at the time, and a
// node added later has no rule to inherit. The nodes here are the null
// device under raw names, so a refusal is the domain's, not the device's.
func TestRawDevicesAttachedLaterAreHiddenToo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making device nodes needs root")
	}
	l := newLayout(t)
	dev := filepath.Join(t.TempDir(), "dev")
	require.NoError(t, os.Mkdir(dev, 0o755))
	node := func(name string) string {
		path := filepath.Join(dev, name)
		require.NoError(t, unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
		return path
	}
	node("null")
	node("sg0")
	if f, err := os.OpenFile(filepath.Join(dev, "sg0"), os.O_WRONLY, 0); err != nil {
		t.Skipf("device nodes do not open on this file system (nodev?): %v", err)
	} else {
		f.Close()
	}
	c := newConfiner(t, Policy{Hidden: []string{l.state}, RawDevicesIn: dev})

	code, out := sh(t, c, l.ws, "echo x > "+dev+"/null && echo null-ok; echo x > "+dev+"/sg0 2>&1 || echo sg0-hidden")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "null-ok")
	assert.Contains(t, out, "sg0-hidden")

	// Attached while a ruleset is cached: no rule covers it.
	node("nvme1")
	code, out = sh(t, c, l.ws, "echo x > "+dev+"/nvme1 2>&1 || echo nvme1-hidden")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "nvme1-hidden")

	// The directory changed, so the next command's rules are cut again:
	// still hidden, and so is a block device (a number no driver serves,
	// so opening it unconfined would say "No such device or address"
	// and load nothing).
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, unix.Mknod(filepath.Join(dev, "vdb"), unix.S_IFBLK|0o666, int(unix.Mkdev(259, 1048000))))
	node("sg1")
	code, out = sh(t, c, l.ws, "echo x > "+dev+"/sg1 2>&1 || echo sg1-hidden; echo x > "+dev+"/nvme1 2>&1 || echo nvme1-hidden; head -c1 "+dev+"/vdb 2>&1; echo x > "+dev+"/null && echo null-ok")
	assert.Equal(t, 0, code, out)
	for _, want := range []string{"sg1-hidden", "nvme1-hidden", "vdb' for reading: Permission denied", "null-ok"} {
		assert.Contains(t, out, want)
	}
}
