package readlimit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A sparse file of a terabyte is refused without being read; a file at
// the limit is read whole.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "settings.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	f.Close()
	var tooLarge *TooLargeError
	if _, err := File(huge, 1<<20); !errors.As(err, &tooLarge) || tooLarge.Path != huge {
		t.Fatalf("a 1 TiB file: %v, want a TooLargeError naming it", err)
	}
	exact := filepath.Join(dir, "exact")
	if err := os.WriteFile(exact, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := File(exact, 5); err != nil || string(data) != "12345" {
		t.Errorf("a file at the limit: %q, %v", data, err)
	}
	if _, err := File(exact, 4); !errors.As(err, &tooLarge) {
		t.Errorf("a file one byte over: %v", err)
	}
	if _, err := File(filepath.Join(dir, "missing"), 5); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// A named pipe, or a link to a device, is refused at once: opening a
// pipe for reading would wait for a writer, reading /dev/zero would not
// end but at the limit.
func TestFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "settings.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	zero := filepath.Join(dir, ".mcp.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, zero} {
		done := make(chan error, 1)
		go func() { _, err := File(path, 1<<20); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want it refused as not a regular file", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still reading after 5 s", path)
		}
	}
}
