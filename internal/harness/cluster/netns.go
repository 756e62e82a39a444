package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

// Link is a Linux network namespace joined to the root namespace by a veth
// pair: the host's only way out. Gateway (root side) and Addr (namespace
// side) are the two ends of a /30.
type Link struct {
	NetNS   string
	Gateway string
	Addr    string
	// rootDev is the root-side device; taking it down partitions the host.
	rootDev string
	nsDev   string
}

// CheckNetNS reports whether this process can create network namespaces
// (root with the ip command); the error says what is missing.
func CheckNetNS(ctx context.Context) error {
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("the ip command (iproute2) is not installed")
	}
	if os.Geteuid() != 0 {
		return errors.New("creating network namespaces needs root")
	}
	probe := fmt.Sprintf("fenix-probe-%d", os.Getpid())
	if err := ipCmd(ctx, "netns", "add", probe); err != nil {
		return fmt.Errorf("cannot create a network namespace: %w", err)
	}
	return ipCmd(ctx, "netns", "delete", probe)
}

// NewLink creates namespace name with a veth pair devPrefix / devPrefix+"n"
// (at most 14 characters) on subnet 10.213.<octet>.0/30.
func NewLink(ctx context.Context, name, devPrefix string, octet int) (*Link, error) {
	l := &Link{
		NetNS:   name,
		Gateway: fmt.Sprintf("10.213.%d.1", octet),
		Addr:    fmt.Sprintf("10.213.%d.2", octet),
		rootDev: devPrefix,
		nsDev:   devPrefix + "n",
	}
	steps := [][]string{
		{"netns", "add", l.NetNS},
		{"link", "add", l.rootDev, "type", "veth", "peer", "name", l.nsDev},
		{"link", "set", l.nsDev, "netns", l.NetNS},
		{"addr", "add", l.Gateway + "/30", "dev", l.rootDev},
		{"link", "set", l.rootDev, "up"},
		{"-n", l.NetNS, "addr", "add", l.Addr + "/30", "dev", l.nsDev},
		{"-n", l.NetNS, "link", "set", l.nsDev, "up"},
		{"-n", l.NetNS, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := ipCmd(ctx, s...); err != nil {
			l.Delete(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return l, nil
}

// Cut takes the root side of the link down: from then on packets between
// the host and everything else are dropped silently, as in a network
// partition (no resets, no errors until timeouts).
func (l *Link) Cut(ctx context.Context) error {
	return ipCmd(ctx, "link", "set", l.rootDev, "down")
}

// Restore brings the link back up; the addresses and routes return with it.
func (l *Link) Restore(ctx context.Context) error {
	return ipCmd(ctx, "link", "set", l.rootDev, "up")
}

// Command runs name with args inside the namespace.
// It enters the network namespace only: `ip netns exec` also mounts a
// sysfs of the namespace's own over /sys, which leaves out the cgroup
// hierarchies, and a worker host has its cgroups (command and hook runs
// get theirs, and the frontend fence is attached to them).
func (l *Link) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/var/run/netns/" + l.NetNS, "--", name}, args...)...)
}

// Delete removes the namespace (which removes the veth pair with it).
func (l *Link) Delete(ctx context.Context) error {
	var errs []error
	if err := ipCmd(ctx, "link", "delete", l.rootDev); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
		errs = append(errs, err)
	}
	if err := ipCmd(ctx, "netns", "delete", l.NetNS); err != nil && !strings.Contains(err.Error(), "No such file") {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// freeOctet picks a 10.213.<octet>.0/30 no interface uses yet.
func freeOctet(start int) (int, error) {
	used := map[string]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return 0, err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			used[ipn.IP.String()] = true
		}
	}
	for i := range 250 {
		octet := (start+i)%250 + 1
		if !used[fmt.Sprintf("10.213.%d.1", octet)] {
			return octet, nil
		}
	}
	return 0, errors.New("no free 10.213.x.0/30 subnet for a host link")
}

// staleNetNS lists namespaces named prefix<pid>-... whose pid is gone.
func staleNetNS(ctx context.Context, prefix string) []string {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return nil
	}
	var stale []string
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if owner, ok := ownerPID(name, prefix, "-"); ok && !processAlive(owner) {
			stale = append(stale, name)
		}
	}
	return stale
}

func ipCmd(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
