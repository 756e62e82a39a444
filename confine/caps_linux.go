//go:build linux

package confine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// keptCapabilities are what a command keeps under
// Policy.BoundCapabilities: the capabilities a container runtime leaves
// its root by default, less CAP_MKNOD (a block device node made in the
// workspace reads the disk around every domain).
var keptCapabilities = map[int]string{
	unix.CAP_CHOWN:            "chown",
	unix.CAP_DAC_OVERRIDE:     "dac_override",
	unix.CAP_FOWNER:           "fowner",
	unix.CAP_FSETID:           "fsetid",
	unix.CAP_KILL:             "kill",
	unix.CAP_SETGID:           "setgid",
	unix.CAP_SETUID:           "setuid",
	unix.CAP_SETPCAP:          "setpcap",
	unix.CAP_NET_BIND_SERVICE: "net_bind_service",
	unix.CAP_NET_RAW:          "net_raw",
	unix.CAP_SYS_CHROOT:       "sys_chroot",
	unix.CAP_AUDIT_WRITE:      "audit_write",
	unix.CAP_SETFCAP:          "setfcap",
}

// KeptCapabilitiesMask is keptCapabilities as /proc/PID/status prints
// a set (CapBnd), for tests and the start log.
func KeptCapabilitiesMask() uint64 {
	var mask uint64
	for c := range keptCapabilities {
		mask |= 1 << c
	}
	return mask
}

// lastCapability is the kernel's highest capability number, read once.
var lastCapability = sync.OnceValue(readLastCapability)

func readLastCapability() int {
	raw, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return unix.CAP_LAST_CAP
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return unix.CAP_LAST_CAP
	}
	return n
}

// boundCapabilities drops every capability but keptCapabilities from
// the calling thread's bounding set and clears its ambient set, so the
// command it starts gets no more at exec, root or not. The thread's own
// effective set is left alone: it still joins namespaces and sets
// credentials for the command.
func boundCapabilities() error {
	last := lastCapability()
	for c := 0; c <= last; c++ {
		if _, kept := keptCapabilities[c]; kept {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("bounding the command's capabilities: prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("bounding the command's capabilities: clearing its ambient set: %w", err)
	}
	return nil
}

// keptCapabilityNames lists keptCapabilities for the start log.
func keptCapabilityNames() string {
	var names []string
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if name, ok := keptCapabilities[c]; ok {
			names = append(names, name)
		}
	}
	return strings.Join(names, " ")
}
