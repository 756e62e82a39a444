// Package atomicfile replaces a file whole or not at all: readers see the
// old content or the new, never a part, and a crash leaves the old.
package atomicfile

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// Write replaces dir/name with data through a uniquely named temporary
// file in dir (mode 0600, as os.CreateTemp makes it), synced before it
// takes the old one's place.
func Write(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}

// WriteJSON is Write of v as indented JSON.
func WriteJSON(dir, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return Write(dir, name, data)
}
