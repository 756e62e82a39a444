// Package benchfs builds the workspaces the cost-curve benchmarks run
// against: many small files, laid out as a project tree or all in one
// directory.
package benchfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Sizes are the workspace sizes of issue 21's curves, in files.
var Sizes = []struct {
	Name  string
	Files int
}{{"files=100", 100}, {"files=10k", 10_000}, {"files=100k", 100_000}}

// FilesPerDir is how many files a leaf directory of Tree holds.
const FilesPerDir = 100

// Tree writes n one-line files under dir as a project tree: leaf
// directories of FilesPerDir files, ten directories per level above them
// (n=100k is d0/d0/d0/f00000.txt … d9/d9/d9/f00099.txt), and returns the path
// of one file in the middle, relative to dir.
func Tree(tb testing.TB, dir string, n int) (middle string) {
	tb.Helper()
	leaves := max(1, (n+FilesPerDir-1)/FilesPerDir)
	depth := len(fmt.Sprint(leaves - 1))
	for leaf := range leaves {
		digits := fmt.Sprintf("%0*d", depth, leaf)
		rel := ""
		for _, d := range digits {
			rel = filepath.Join(rel, "d"+string(d))
		}
		files := min(FilesPerDir, n-leaf*FilesPerDir)
		write(tb, filepath.Join(dir, rel), files)
		if leaf == leaves/2 {
			middle = filepath.ToSlash(filepath.Join(rel, fileName(files/2)))
		}
	}
	return middle
}

// Flat writes n one-line files in dir itself and returns the name of the
// one in the middle.
func Flat(tb testing.TB, dir string, n int) (middle string) {
	tb.Helper()
	write(tb, dir, n)
	return fileName(n / 2)
}

func fileName(i int) string { return fmt.Sprintf("f%05d.txt", i) }

func write(tb testing.TB, dir string, n int) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fileName(i)), []byte("package main // file\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
