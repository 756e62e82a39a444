// Package readlimit reads files that must stay small — settings, hook
// scripts, MCP configurations, the worker's records — without trusting
// their size: a command can leave a sparse file of many gigabytes where a
// settings file was, and reading it whole would take the worker down at
// its next start.
package readlimit

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// TooLargeError is a file over its limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is over the %d-byte limit", e.Path, e.Limit)
}

// File reads path, which must be a regular file (after links), when it
// holds at most limit bytes, and returns a *TooLargeError, having read at
// most limit+1 bytes, when it holds more. It opens without blocking: a
// named pipe left where a settings file was would otherwise hold the
// reader (a worker's start) until something writes to it.
func File(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, info.Mode().Type())
	}
	if info.Size() > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	// The file may grow after the check.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}
