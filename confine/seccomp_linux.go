package confine

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock leaves one way for a command to reach a process it did not
// start and whose user it shares: prlimit64 on another PID. Lowering a
// hook's RLIMIT_NOFILE or RLIMIT_NPROC while it runs makes the programs
// it starts (grep, jq) fail, and a guard written as `if … | grep -q`
// then allows; lowering the worker's breaks it. So a seccomp filter,
// installed on the thread that starts the command next to its Landlock
// domain and inherited by everything the command starts, answers EPERM
// to prlimit64 with a PID other than 0. Setting one's own limits (ulimit,
// setrlimit, prlimit without --pid: all PID 0) is unaffected.
//
// The kernel's keyrings are not namespaced and no file rule reaches
// them: a command read what its user (root's, on a root worker) keeps in
// its user keyring — credentials a login or a mount put there — and left
// keys there for another conversation's commands to read, a channel
// between runs. The same filter refuses add_key, request_key and keyctl,
// and io_uring (setup, enter, register), whose long record of kernel
// flaws a root command would otherwise have in reach, as container
// runtimes' default seccomp profiles refuse both (programs that use
// io_uring fall back to ordinary calls when its setup fails).

// filteredCalls are the call numbers the filter looks at per audit
// architecture the kernel may see from this GOARCH's processes: the
// native one (x32's is the native number with its bit set) and the
// 32-bit compat one.
type filteredCalls struct {
	arch, nr, nrAlt, compatArch, compatNr uint32
	// keys and compatKeys are the calls always refused: add_key,
	// request_key and keyctl first, then io_uring_setup, io_uring_enter
	// and io_uring_register (keys with their x32 numbers after them).
	keys, compatKeys []uint32
}

// x32Bit marks an x32 call number.
const x32Bit = 0x40000000

func filteredCallsFor(goarch string) (filteredCalls, bool) {
	switch goarch {
	case "amd64":
		return filteredCalls{arch: unix.AUDIT_ARCH_X86_64, nr: 302, nrAlt: 302 | x32Bit, compatArch: unix.AUDIT_ARCH_I386, compatNr: 340,
			keys:       []uint32{248, 249, 250, 425, 426, 427, 248 | x32Bit, 249 | x32Bit, 250 | x32Bit, 425 | x32Bit, 426 | x32Bit, 427 | x32Bit},
			compatKeys: []uint32{286, 287, 288, 425, 426, 427}}, true
	case "arm64":
		return filteredCalls{arch: unix.AUDIT_ARCH_AARCH64, nr: 261, nrAlt: 261, compatArch: unix.AUDIT_ARCH_ARM, compatNr: 369,
			keys: []uint32{217, 218, 219, 425, 426, 427}, compatKeys: []uint32{309, 310, 311, 425, 426, 427}}, true
	}
	return filteredCalls{}, false
}

// seccomp_data offsets (little-endian: an argument's low word first).
const (
	offsetNr      = 0
	offsetArch    = 4
	offsetArg0Low = 16
	offsetArg0Hi  = 20
	offsetArg1Low = 24
)

// The classic BPF instructions the filters are made of.
func load(off uint32) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
}

// jeq jumps jt instructions past the next one when the loaded word is k,
// jf past it otherwise.
func jeq(k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
}

func ret(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }

// installFilter installs prog on the calling thread (no TSYNC: the
// worker's other threads stay unfiltered). Like a Landlock domain it
// needs no_new_privs or CAP_SYS_ADMIN.
func installFilter(prog []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	runtime.KeepAlive(prog)
	return nil
}

// commandFilter is the BPF program: allow everything but prlimit64 with
// a PID other than 0 and the keyring calls.
func commandFilter(c filteredCalls) []unix.SockFilter {
	p := newBPF()
	p.add(load(offsetArch))
	p.jeq(c.arch, "", "compat")
	p.add(load(offsetNr))
	p.jeq(c.nr, "prlimit", "")
	p.jeq(c.nrAlt, "prlimit", "")
	for _, key := range c.keys[:len(c.keys)-1] {
		p.jeq(key, "deny", "")
	}
	p.jeq(c.keys[len(c.keys)-1], "deny", "allow")
	p.label("compat")
	p.jeq(c.compatArch, "", "allow")
	p.add(load(offsetNr))
	p.jeq(c.compatNr, "prlimit", "")
	for _, key := range c.compatKeys[:len(c.compatKeys)-1] {
		p.jeq(key, "deny", "")
	}
	p.jeq(c.compatKeys[len(c.compatKeys)-1], "deny", "allow")
	p.label("prlimit")
	p.add(load(offsetArg0Low))
	p.jeq(0, "", "deny")
	p.add(load(offsetArg0Hi))
	p.jeq(0, "allow", "deny")
	p.label("allow")
	p.add(ret(unix.SECCOMP_RET_ALLOW))
	p.label("deny")
	p.add(ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)))
	return p.assemble()
}

// filterCommand installs commandFilter on the calling thread. A GOARCH
// without a table is left unfiltered (PrlimitFiltered reports it).
func filterCommand() error {
	calls, ok := filteredCallsFor(runtime.GOARCH)
	if !ok {
		return nil
	}
	return installFilter(commandFilter(calls))
}

// probeCommandFilter installs the filter on a thread of its own that ends
// with it, so a kernel without seccomp filters (or a worker whose own
// seccomp profile forbids adding one) is found at start: commands then go
// without the filter, and the start log says why, rather than every
// command failing to start.
func probeCommandFilter() error {
	if _, ok := filteredCallsFor(runtime.GOARCH); !ok {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine, filter and all.
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
			return
		}
		done <- filterCommand()
	}()
	return <-done
}

// A network-sandboxed command could still leave its namespace through a
// Unix socket: pathname sockets live in the filesystem, not in the
// network namespace, so a host daemon's socket (docker.sock, a local
// proxy's) would carry it out. As Claude Code's sandbox does on Linux,
// creating an AF_UNIX socket is refused unless the settings allow all
// Unix sockets (socketpair, which reaches nothing outside, still works).
// io_uring is refused with it: its IORING_OP_SOCKET creates sockets past
// seccomp.

// socketCalls are the call numbers of socket, socketcall (i386 only;
// socket again where there is none) and io_uring_setup per audit
// architecture.
type socketCalls struct {
	arch, socket, socketAlt, ioUring, ioUringAlt         uint32
	compatArch, compatSocket, compatSocketcall, compatIO uint32
}

func socketCallsFor(goarch string) (socketCalls, bool) {
	switch goarch {
	case "amd64":
		return socketCalls{arch: unix.AUDIT_ARCH_X86_64, socket: 41, socketAlt: 41 | x32Bit, ioUring: 425, ioUringAlt: 425 | x32Bit,
			compatArch: unix.AUDIT_ARCH_I386, compatSocket: 359, compatSocketcall: 102, compatIO: 425}, true
	case "arm64":
		return socketCalls{arch: unix.AUDIT_ARCH_AARCH64, socket: 198, socketAlt: 198, ioUring: 425, ioUringAlt: 425,
			compatArch: unix.AUDIT_ARCH_ARM, compatSocket: 281, compatSocketcall: 281, compatIO: 425}, true
	}
	return socketCalls{}, false
}

// socketRefusals say which sockets a command may not create.
type socketRefusals struct {
	// unix refuses AF_UNIX (unless the settings allow all Unix sockets).
	unix bool
	// datagram refuses UDP and raw AF_INET/AF_INET6 sockets: where a
	// command's TCP is held to its proxies by Landlock rather than by a
	// namespace, UDP (DNS lookups included) would still go anywhere.
	datagram bool
}

// socketFilter is the BPF program: EPERM for io_uring_setup and for the
// sockets refused, in the native and the compat ABI, everything else
// allowed. i386's socketcall carries its arguments behind a pointer, so
// its SYS_SOCKET is refused whatever the family: 32-bit programs that
// create sockets through it are rare, and their traffic would go past
// the checks.
func socketFilter(c socketCalls, refuse socketRefusals) []unix.SockFilter {
	const sysSocket = 1 // socketcall's call number for socket
	p := newBPF()
	p.add(load(offsetArch))
	p.jeq(c.arch, "", "compat")
	p.add(load(offsetNr))
	p.jeq(c.socket, "socket", "")
	p.jeq(c.socketAlt, "socket", "")
	p.jeq(c.ioUring, "deny", "")
	p.jeq(c.ioUringAlt, "deny", "allow")
	p.label("compat")
	p.jeq(c.compatArch, "", "allow")
	p.add(load(offsetNr))
	p.jeq(c.compatSocket, "socket", "")
	p.jeq(c.compatSocketcall, "socketcall", "")
	p.jeq(c.compatIO, "deny", "allow")
	p.label("socketcall")
	p.add(load(offsetArg0Low))
	p.jeq(sysSocket, "deny", "allow")
	p.label("socket")
	p.add(load(offsetArg0Low)) // an int: the kernel reads the low word only
	unixVerdict, datagramVerdict := "allow", "allow"
	if refuse.unix {
		unixVerdict = "deny"
	}
	if refuse.datagram {
		datagramVerdict = "deny"
	}
	p.jeq(unix.AF_UNIX, unixVerdict, "")
	p.jeq(unix.AF_INET, "type", "")
	p.jeq(unix.AF_INET6, "type", "allow")
	p.label("type")
	p.add(load(offsetArg1Low))
	p.add(unix.SockFilter{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: 0xf}) // SOCK_TYPE_MASK: no SOCK_CLOEXEC, SOCK_NONBLOCK
	p.jeq(unix.SOCK_DGRAM, datagramVerdict, "")
	p.jeq(unix.SOCK_RAW, datagramVerdict, "allow")
	p.label("allow")
	p.add(ret(unix.SECCOMP_RET_ALLOW))
	p.label("deny")
	p.add(ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)))
	return p.assemble()
}

// bpfProgram assembles a classic BPF program whose conditional jumps name
// labels ("" for the next instruction), so no offset is counted by hand.
type bpfProgram struct {
	ins    []unix.SockFilter
	labels map[string]int
	jumps  map[int][2]string
}

func newBPF() *bpfProgram { return &bpfProgram{labels: map[string]int{}, jumps: map[int][2]string{}} }

func (p *bpfProgram) add(f unix.SockFilter) { p.ins = append(p.ins, f) }

func (p *bpfProgram) label(name string) { p.labels[name] = len(p.ins) }

// jeq jumps to yes when the loaded word is k, to no otherwise.
func (p *bpfProgram) jeq(k uint32, yes, no string) {
	p.jumps[len(p.ins)] = [2]string{yes, no}
	p.add(jeq(k, 0, 0))
}

func (p *bpfProgram) assemble() []unix.SockFilter {
	offset := func(from int, label string) uint8 {
		if label == "" {
			return 0
		}
		to, ok := p.labels[label]
		if !ok || to <= from || to-from-1 > 255 {
			panic(fmt.Sprintf("bpf: no reachable label %q from instruction %d", label, from))
		}
		return uint8(to - from - 1)
	}
	for i, j := range p.jumps {
		p.ins[i].Jt = offset(i, j[0])
		p.ins[i].Jf = offset(i, j[1])
	}
	return p.ins
}

// filterSockets installs socketFilter on the calling thread.
func filterSockets(refuse socketRefusals) error {
	calls, ok := socketCallsFor(runtime.GOARCH)
	if !ok {
		return fmt.Errorf("no socket filter for %s", runtime.GOARCH)
	}
	return installFilter(socketFilter(calls, refuse))
}
