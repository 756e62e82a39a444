package tools

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// Routing contract. Every resource a host creates (a command run, a
// background process) has an ID of the form <kind>_<hostID>_<16 hex>, for
// example cmd_vm-3f9a1c_0123456789abcdef, and only the host that created it
// can serve later calls about it. A call whose Definition.OwnerResource is
// non-empty must run on HostQueue(HostOfResource(id)).
const (
	// HostQueuePrefix starts every host-pinned task queue name.
	HostQueuePrefix = "fenix-host-"
	// ResourceCommandRun and ResourceProcessRun are the resource kinds.
	ResourceCommandRun     = "cmd"
	ResourceProcessRun     = "proc"
	ResourceBrowserSession = "brw"
)

var (
	hostIDPattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)
	resourceIDPattern = regexp.MustCompile(`^([a-z]+)_([a-z0-9][a-z0-9-]{0,39})_([0-9a-f]{16})$`)
)

// HostQueue is the task queue only the worker with this host ID polls.
func HostQueue(hostID string) string { return HostQueuePrefix + hostID }

// HostOfResource extracts the host ID from a resource ID.
func HostOfResource(id string) (string, bool) {
	m := resourceIDPattern.FindStringSubmatch(id)
	if m == nil {
		return "", false
	}
	return m[2], true
}

// ValidateHostID checks the host ID grammar: 1-40 lowercase letters,
// digits and '-', starting with a letter or digit (it must fit inside
// resource IDs and task queue names).
func ValidateHostID(id string) error {
	if !hostIDPattern.MatchString(id) {
		return fmt.Errorf("host ID %q is invalid: use 1-40 lowercase letters, digits or '-', starting with a letter or digit", id)
	}
	return nil
}

// NewResourceID mints a resource ID owned by hostID.
func NewResourceID(kind, hostID string) (string, error) {
	if kind == "" || strings.Trim(kind, "abcdefghijklmnopqrstuvwxyz") != "" {
		return "", fmt.Errorf("resource kind %q must be lowercase letters", kind)
	}
	if err := ValidateHostID(hostID); err != nil {
		return "", err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return kind + "_" + hostID + "_" + hex.EncodeToString(b[:]), nil
}
