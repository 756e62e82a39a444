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
)

// TooLargeError is a file over its limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is over the %d-byte limit", e.Path, e.Limit)
}

// File reads path when it holds at most limit bytes, and returns a
// *TooLargeError, having read at most limit+1 bytes, when it holds more.
func File(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil {
		return nil, err
	} else if info.Mode().IsRegular() && info.Size() > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	// The size may grow after the check, and a pipe or device has none.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}
