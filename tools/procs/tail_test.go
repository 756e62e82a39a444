package procs

import (
	"bytes"
	"strings"
	"testing"
)

func TestTailKeepsTheNewestBytes(t *testing.T) {
	tests := []struct {
		name      string
		keep      int
		writes    []string
		wantKept  string
		wantStart int64
	}{
		{"under capacity", 8, []string{"abc", "de"}, "abcde", 0},
		{"exactly full", 5, []string{"abc", "de"}, "abcde", 0},
		{"wraps", 5, []string{"abc", "def", "gh"}, "defgh", 3},
		{"one huge write", 4, []string{"0123456789"}, "6789", 6},
		{"many small writes", 3, strings.Split("abcdefghij", ""), "hij", 7},
		{"huge after wrap", 4, []string{"ab", "cdef", "0123456789"}, "6789", 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tail := NewTail(tt.keep)
			var all string
			for _, w := range tt.writes {
				tail.Write([]byte(w))
				all += w
			}
			got, start := tail.Last(0)
			if string(got) != tt.wantKept || start != tt.wantStart {
				t.Errorf("Last(0) = %q at %d, want %q at %d", got, start, tt.wantKept, tt.wantStart)
			}
			if tail.Total() != int64(len(all)) {
				t.Errorf("Total() = %d, want %d", tail.Total(), len(all))
			}
		})
	}
}

func TestTailWindows(t *testing.T) {
	tail := NewTail(10)
	tail.Write([]byte("0123456789abcdef")) // keeps "6789abcdef" from offset 6
	tests := []struct {
		name      string
		got       func() ([]byte, int64)
		want      string
		wantStart int64
	}{
		{"Last 3", func() ([]byte, int64) { return tail.Last(3) }, "def", 13},
		{"Since kept start", func() ([]byte, int64) { return tail.Since(8, 0) }, "89abcdef", 8},
		{"Since dropped offset", func() ([]byte, int64) { return tail.Since(2, 0) }, "6789abcdef", 6},
		{"Since with cap keeps newest", func() ([]byte, int64) { return tail.Since(8, 2) }, "ef", 14},
		{"Since end", func() ([]byte, int64) { return tail.Since(16, 0) }, "", 16},
		{"ReadAt forward", func() ([]byte, int64) { return tail.ReadAt(7, 3) }, "789", 7},
		{"ReadAt before kept", func() ([]byte, int64) { return tail.ReadAt(0, 2) }, "67", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, start := tt.got()
			if string(got) != tt.want || start != tt.wantStart {
				t.Errorf("got %q at %d, want %q at %d", got, start, tt.want, tt.wantStart)
			}
		})
	}
}

func TestValidText(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		cut  bool
		want string
	}{
		{"ascii", []byte("hi"), false, "hi"},
		{"invalid bytes replaced", []byte("a\xff\xfeb"), false, "a\uFFFDb"},
		{"split rune at a cut is dropped", append([]byte("é")[1:], "ok"...), true, "ok"},
		{"split rune without a cut is replaced", append([]byte("é")[1:], "ok"...), false, "\uFFFDok"},
		{"whole multibyte kept", []byte("日本"), true, "日本"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidText(tt.in, tt.cut); got != tt.want {
				t.Errorf("ValidText(%q, %v) = %q, want %q", tt.in, tt.cut, got, tt.want)
			}
		})
	}
}

func TestTailConcurrentWriters(t *testing.T) {
	tail := NewTail(1024)
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 1000 {
				tail.Write(bytes.Repeat([]byte("x"), 7))
			}
		}()
	}
	for range 4 {
		<-done
	}
	if tail.Total() != 4*1000*7 {
		t.Fatalf("Total() = %d, want %d", tail.Total(), 4*1000*7)
	}
	got, _ := tail.Last(0)
	if len(got) != 1024 {
		t.Fatalf("kept %d bytes, want 1024", len(got))
	}
}
