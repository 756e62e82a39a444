package confine

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// RawDevices are the device nodes in dev (and its subdirectories, one
// level down) through which root reads or writes a disk or memory
// beneath every file's permissions: block devices, SCSI generic and NVMe
// controller nodes, /dev/mem, /dev/kmem and /dev/port.
func RawDevices(dev string) []string {
	var out []string
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			switch {
			case rawDevice(e.Name(), e.Type()):
				out = append(out, path)
			case e.IsDir() && depth > 0 && !slices.Contains([]string{"pts", "shm", "mqueue", "hugepages", "fd"}, e.Name()):
				walk(path, depth-1)
			}
		}
	}
	walk(dev, 1)
	return out
}

// rawDevice is whether an entry named name of type mode is a raw disk or
// memory node.
func rawDevice(name string, mode fs.FileMode) bool {
	switch {
	case mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0:
		return true // a block device
	case mode&fs.ModeCharDevice == 0:
		return false
	}
	switch name {
	case "mem", "kmem", "port":
		return true
	}
	if rest, ok := strings.CutPrefix(name, "sg"); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
		return true
	}
	rest, ok := strings.CutPrefix(name, "nvme")
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}
