//go:build linux

package confine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Fence holds the loaded connect programs; Apply attaches them to a
// cgroup before the first process enters it.
type Fence struct {
	endpoints []Endpoint
	v4, v6    *ebpf.Program
}

// Offsets in struct bpf_sock_addr (include/uapi/linux/bpf.h) of what the
// programs read: the destination of connect(2), in network byte order.
const (
	sockAddrUserIP4  = 4
	sockAddrUserIP6  = 8 // four 32-bit words
	sockAddrUserPort = 24
)

// NewFence loads the programs that refuse connections to endpoints. It
// needs CAP_BPF and CAP_NET_ADMIN (or CAP_SYS_ADMIN), so a non-root
// worker gets an error saying so.
func NewFence(endpoints []Endpoint) (*Fence, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("fence: no endpoints")
	}
	f := &Fence{endpoints: endpoints}
	var err error
	if f.v4, err = loadConnectProgram(ebpf.AttachCGroupInet4Connect, endpoints); err != nil {
		return nil, err
	}
	if f.v6, err = loadConnectProgram(ebpf.AttachCGroupInet6Connect, endpoints); err != nil {
		f.v4.Close()
		return nil, err
	}
	return f, nil
}

// Apply attaches the fence to the cgroup open at cgroupFD: connect(2) to
// an endpoint fails with EPERM for every process in it, and in the
// cgroups below it. The programs stay attached until the cgroup is
// removed; a process inside without CAP_NET_ADMIN and CAP_BPF cannot
// detach them.
func (f *Fence) Apply(cgroupFD int) error {
	for _, p := range []struct {
		prog   *ebpf.Program
		attach ebpf.AttachType
	}{{f.v4, ebpf.AttachCGroupInet4Connect}, {f.v6, ebpf.AttachCGroupInet6Connect}} {
		err := link.RawAttachProgram(link.RawAttachProgramOptions{
			Target: cgroupFD, Program: p.prog, Attach: p.attach, Flags: unix.BPF_F_ALLOW_MULTI,
		})
		if err != nil {
			return fmt.Errorf("fencing off %s: attaching the %s program to the command's cgroup: %w", f, p.attach, err)
		}
	}
	return nil
}

// Close releases the worker's handles on the programs; cgroups they are
// attached to keep them.
func (f *Fence) Close() {
	f.v4.Close()
	f.v6.Close()
}

func (f *Fence) String() string {
	parts := make([]string, len(f.endpoints))
	for i, e := range f.endpoints {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}

// loadConnectProgram builds and loads a cgroup connect program that
// returns 0 (refuse, EPERM) when the destination matches an endpoint
// and 1 (allow) otherwise. The IPv6 program also matches IPv4
// endpoints in their mapped form (::ffff:a.b.c.d), which is how an
// AF_INET6 socket connects to an IPv4 address.
func loadConnectProgram(attach ebpf.AttachType, endpoints []Endpoint) (*ebpf.Program, error) {
	v6 := attach == ebpf.AttachCGroupInet6Connect
	var insns asm.Instructions
	label := func(i int) string { return fmt.Sprintf("endpoint%d", i) }
	// Endpoint i's test starts at label(i); a mismatch jumps to the
	// next one's, and past the last to the allowing return.
	next := 0
	insns = append(insns, asm.LoadMem(asm.R2, asm.R1, sockAddrUserPort, asm.Word))
	for _, e := range endpoints {
		prefix := e.Prefix
		if prefix.Addr().Is4() && v6 {
			prefix = netip.PrefixFrom(netip.AddrFrom16(prefix.Addr().As16()), prefix.Bits()+96)
		}
		if prefix.Addr().Is4() == v6 {
			continue
		}
		first := asm.JNE.Imm32(asm.R2, int32(portWord(e.Port)), label(next+1)).WithSymbol(label(next))
		insns = append(insns, first)
		addr, mask := words(prefix)
		offset := int16(sockAddrUserIP4)
		if v6 {
			offset = sockAddrUserIP6
		}
		for w := range addr {
			if mask[w] == 0 {
				continue
			}
			insns = append(insns, asm.LoadMem(asm.R3, asm.R1, offset+int16(4*w), asm.Word))
			if mask[w] != 0xffffffff {
				insns = append(insns, asm.And.Imm32(asm.R3, int32(mask[w])))
			}
			insns = append(insns, asm.JNE.Imm32(asm.R3, int32(addr[w]), label(next+1)))
		}
		insns = append(insns, asm.Ja.Label("refuse"))
		next++
	}
	insns = append(insns,
		asm.Mov.Imm(asm.R0, 1).WithSymbol(label(next)),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("refuse"),
		asm.Return(),
	)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "fenix_fence", Type: ebpf.CGroupSockAddr, AttachType: attach,
		Instructions: insns, License: "GPL",
	})
	if err != nil {
		return nil, fmt.Errorf("fence: loading the %s program (needs CAP_BPF and CAP_NET_ADMIN, or root): %w", attach, err)
	}
	return prog, nil
}

// portWord is port as the program reads user_port: the two bytes in
// network order at the start of a 32-bit word loaded little-endian.
func portWord(port uint16) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint16(b[:2], port)
	return binary.NativeEndian.Uint32(b[:])
}

// words are prefix's address and mask as the program reads them: 32-bit
// words loaded from network-order bytes in the machine's order.
func words(prefix netip.Prefix) (addr, mask []uint32) {
	raw := prefix.Masked().Addr().AsSlice()
	maskBytes := make([]byte, len(raw))
	for i := range prefix.Bits() {
		maskBytes[i/8] |= 0x80 >> (i % 8)
	}
	for i := 0; i < len(raw); i += 4 {
		addr = append(addr, binary.NativeEndian.Uint32(raw[i:i+4]))
		mask = append(mask, binary.NativeEndian.Uint32(maskBytes[i:i+4]))
	}
	return addr, mask
}

// siblingPorts are the TCP ports, other than port, that the processes
// listening on port (in this network namespace) listen on: read from
// /proc/net/tcp{,6} and the processes' descriptors, so it finds what the
// worker may read (all of it as root). Nil when nothing is found.
func siblingPorts(port uint16) []uint16 {
	listening := map[uint64]uint16{} // socket inode → port
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 || fields[3] != "0A" { // TCP_LISTEN
				continue
			}
			_, portHex, ok := strings.Cut(fields[1], ":")
			if !ok {
				continue
			}
			p, err1 := strconv.ParseUint(portHex, 16, 16)
			inode, err2 := strconv.ParseUint(fields[9], 10, 64)
			if err1 == nil && err2 == nil && inode != 0 {
				listening[inode] = uint16(p)
			}
		}
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var siblings []uint16
	for _, proc := range procs {
		if _, err := strconv.Atoi(proc.Name()); err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", proc.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		var ports []uint16
		serves := false
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(target, "socket:[") {
				continue
			}
			inode, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]"), 10, 64)
			if err != nil {
				continue
			}
			if p, ok := listening[inode]; ok {
				ports = append(ports, p)
				serves = serves || p == port
			}
		}
		if serves {
			for _, p := range ports {
				if p != port && !slices.Contains(siblings, p) {
					siblings = append(siblings, p)
				}
			}
		}
	}
	slices.Sort(siblings)
	return siblings
}
