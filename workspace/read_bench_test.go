package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkReadFile reads a 1 KiB file by paths of one and six components
// with no symlink on the way (the common case), and by one that goes
// through a symlinked directory.
func BenchmarkReadFile(b *testing.B) {
	dir := b.TempDir()
	for _, p := range []string{"f.txt", "a/b/c/d/e/f.txt"} {
		mustWrite(b, filepath.Join(dir, p), strings.Repeat("x", 1<<10))
	}
	if err := os.Symlink("a/b/c", filepath.Join(dir, "link")); err != nil {
		b.Fatal(err)
	}
	ws, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	for _, c := range []struct{ name, path string }{
		{"depth1", "f.txt"},
		{"depth6", "a/b/c/d/e/f.txt"},
		{"depth4_through_symlink", "link/d/e/f.txt"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if _, err := ws.ReadFile(c.path, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
