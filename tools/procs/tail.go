package procs

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Tail keeps the last bytes written to it and counts every byte, so a
// command that prints a gigabyte costs at most the buffer's capacity.
type Tail struct {
	mu    sync.Mutex
	buf   []byte // ring storage, len == capacity once full
	keep  int
	head  int // index of the oldest kept byte once the ring is full
	total int64
}

// NewTail keeps at most keep bytes.
func NewTail(keep int) *Tail {
	if keep <= 0 {
		keep = 1
	}
	return &Tail{keep: keep}
}

// Write never fails: bytes past the capacity push the oldest ones out.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	if n >= t.keep {
		t.buf = append(t.buf[:0], p[n-t.keep:]...)
		t.head = 0
		return n, nil
	}
	if len(t.buf) < t.keep {
		room := t.keep - len(t.buf)
		if n <= room {
			t.buf = append(t.buf, p...)
			return n, nil
		}
		t.buf = append(t.buf, p[:room]...)
		p = p[room:]
		t.head = 0
	}
	for len(p) > 0 {
		c := copy(t.buf[t.head:], p)
		p = p[c:]
		t.head = (t.head + c) % t.keep
	}
	return n, nil
}

// Total is the number of bytes ever written.
func (t *Tail) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// kept returns the kept bytes in order and the stream offset of the first.
// The caller holds mu.
func (t *Tail) kept() ([]byte, int64) {
	out := make([]byte, 0, len(t.buf))
	if len(t.buf) < t.keep {
		out = append(out, t.buf...)
	} else {
		out = append(out, t.buf[t.head:]...)
		out = append(out, t.buf[:t.head]...)
	}
	return out, t.total - int64(len(out))
}

// Last returns at most max trailing bytes and the stream offset of the
// first returned byte.
func (t *Tail) Last(max int) ([]byte, int64) {
	return t.Since(0, max)
}

// Since returns the last at most max bytes written at or after stream
// offset off (bytes no longer kept are skipped), and the offset of the
// first returned byte.
func (t *Tail) Since(off int64, max int) ([]byte, int64) {
	t.mu.Lock()
	data, start := t.kept()
	t.mu.Unlock()
	data, start = fromOffset(data, start, off)
	if max > 0 && len(data) > max {
		start += int64(len(data) - max)
		data = data[len(data)-max:]
	}
	return data, start
}

// ReadAt returns at most max bytes from stream offset off forward (clamped
// to the oldest kept byte) and the offset of the first returned byte.
func (t *Tail) ReadAt(off int64, max int) ([]byte, int64) {
	t.mu.Lock()
	data, start := t.kept()
	t.mu.Unlock()
	return Window(data, start, off, max)
}

// Window selects at most max bytes starting at stream offset off from data,
// whose first byte is at stream offset start.
func Window(data []byte, start, off int64, max int) ([]byte, int64) {
	data, start = fromOffset(data, start, off)
	if max > 0 && len(data) > max {
		data = data[:max]
	}
	return data, start
}

// fromOffset drops the bytes of data (whose first byte is at stream offset
// start) before stream offset off; past the end it is empty at the end.
func fromOffset(data []byte, start, off int64) ([]byte, int64) {
	if off <= start {
		return data, start
	}
	skip := off - start
	if skip >= int64(len(data)) {
		return nil, start + int64(len(data))
	}
	return data[skip:], off
}

// ValidText turns captured bytes into valid UTF-8 for JSON. When the bytes
// were cut out of a longer stream (cut), a multi-byte character split at the
// start is dropped instead of turning into a replacement character.
func ValidText(b []byte, cut bool) string {
	if cut {
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
