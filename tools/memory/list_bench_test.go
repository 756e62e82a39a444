package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkList measures memory_list and the operator snapshot's memory
// source over a profile of full entries and over a profile directory an
// agent filled with files that are not entries.
func BenchmarkList(b *testing.B) {
	for _, c := range []struct {
		name          string
		entries, junk int
		contentBytes  int
	}{
		{"10_entries_1KiB", 10, 0, 1 << 10},
		{"500_entries_1KiB", 500, 0, 1 << 10},
		{"500_entries_64KiB", 500, 0, MaxContentBytes},
		{"10_entries_100k_junk", 10, 100_000, 1 << 10},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, dir := newStore(b)
			content := strings.Repeat("x", c.contentBytes)
			for i := range c.entries {
				if _, _, err := s.Write("main", Entry{Key: fmt.Sprintf("k%04d", i), Title: "t", Content: content}); err != nil {
					b.Fatal(err)
				}
			}
			profileDir := filepath.Join(dir, ProfileDir("main"))
			for i := range c.junk {
				if err := os.WriteFile(filepath.Join(profileDir, fmt.Sprintf("junk%06d.json", i)), []byte("{"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if _, err := s.List("main"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
