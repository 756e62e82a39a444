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

// prlimitCalls is the prlimit64 system call number per audit
// architecture the kernel may see from this GOARCH's processes: the
// native one (x32's is the native number with its bit set) and the
// 32-bit compat one.
type prlimitCalls struct {
	arch, nr, nrAlt, compatArch, compatNr uint32
}

func prlimitCallsFor(goarch string) (prlimitCalls, bool) {
	switch goarch {
	case "amd64":
		const x32Bit = 0x40000000
		return prlimitCalls{arch: unix.AUDIT_ARCH_X86_64, nr: 302, nrAlt: 302 | x32Bit, compatArch: unix.AUDIT_ARCH_I386, compatNr: 340}, true
	case "arm64":
		return prlimitCalls{arch: unix.AUDIT_ARCH_AARCH64, nr: 261, nrAlt: 261, compatArch: unix.AUDIT_ARCH_ARM, compatNr: 369}, true
	}
	return prlimitCalls{}, false
}

// seccomp_data offsets (little-endian: an argument's low word first).
const (
	offsetNr      = 0
	offsetArch    = 4
	offsetArg0Low = 16
	offsetArg0Hi  = 20
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

// prlimitFilter is the BPF program: allow everything but prlimit64 with
// a PID other than 0.
func prlimitFilter(c prlimitCalls) []unix.SockFilter {
	return []unix.SockFilter{
		/* 0 */ load(offsetArch),
		/* 1 */ jeq(c.arch, 0, 3), // native: 2, else 5
		/* 2 */ load(offsetNr),
		/* 3 */ jeq(c.nr, 4, 0), // prlimit64: 8, else 4
		/* 4 */ jeq(c.nrAlt, 3, 7), // prlimit64: 8, else allow
		/* 5 */ jeq(c.compatArch, 0, 6), // compat: 6, else allow
		/* 6 */ load(offsetNr),
		/* 7 */ jeq(c.compatNr, 0, 4), // prlimit64: 8, else allow
		/* 8 */ load(offsetArg0Low),
		/* 9 */ jeq(0, 0, 3), // PID 0: 10, else deny
		/* 10 */ load(offsetArg0Hi),
		/* 11 */ jeq(0, 0, 1), // PID 0: allow, else deny
		/* 12 */ ret(unix.SECCOMP_RET_ALLOW),
		/* 13 */ ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)),
	}
}

// filterPrlimit installs prlimitFilter on the calling thread. A GOARCH
// without a table is left unfiltered (PrlimitFiltered reports it).
func filterPrlimit() error {
	calls, ok := prlimitCallsFor(runtime.GOARCH)
	if !ok {
		return nil
	}
	return installFilter(prlimitFilter(calls))
}

// probePrlimitFilter installs the filter on a thread of its own that ends
// with it, so a kernel without seccomp filters (or a worker whose own
// seccomp profile forbids adding one) is found at start: commands then go
// without the filter, and the start log says why, rather than every
// command failing to start.
func probePrlimitFilter() error {
	if _, ok := prlimitCallsFor(runtime.GOARCH); !ok {
		return fmt.Errorf("no prlimit64 filter for %s", runtime.GOARCH)
	}
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine, filter and all.
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
			return
		}
		done <- filterPrlimit()
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
		const x32Bit = 0x40000000
		return socketCalls{arch: unix.AUDIT_ARCH_X86_64, socket: 41, socketAlt: 41 | x32Bit, ioUring: 425, ioUringAlt: 425 | x32Bit,
			compatArch: unix.AUDIT_ARCH_I386, compatSocket: 359, compatSocketcall: 102, compatIO: 425}, true
	case "arm64":
		return socketCalls{arch: unix.AUDIT_ARCH_AARCH64, socket: 198, socketAlt: 198, ioUring: 425, ioUringAlt: 425,
			compatArch: unix.AUDIT_ARCH_ARM, compatSocket: 281, compatSocketcall: 281, compatIO: 425}, true
	}
	return socketCalls{}, false
}

// unixSocketFilter is the BPF program: EPERM for socket(AF_UNIX, …) and
// io_uring_setup, in the native and the compat ABI, everything else
// allowed. i386's socketcall carries its arguments behind a pointer, so
// its SYS_SOCKET (1) is refused whatever the family: 32-bit programs
// that create sockets through it have only loopback to reach here anyway.
func unixSocketFilter(c socketCalls) []unix.SockFilter {
	const afUnix = unix.AF_UNIX // also socketcall's SYS_SOCKET
	// Indices: 14 checks the first argument, 16 allows, 17 refuses.
	return []unix.SockFilter{
		/* 0 */ load(offsetArch),
		/* 1 */ jeq(c.arch, 0, 6), // native: 2, else 8
		/* 2 */ load(offsetNr),
		/* 3 */ jeq(c.socket, 10, 0), // socket: 14
		/* 4 */ jeq(c.socketAlt, 9, 0), // socket: 14
		/* 5 */ jeq(c.ioUring, 11, 0), // io_uring_setup: 17
		/* 6 */ jeq(c.ioUringAlt, 10, 0), // io_uring_setup: 17
		/* 7 */ ret(unix.SECCOMP_RET_ALLOW),
		/* 8 */ jeq(c.compatArch, 0, 7), // compat: 9, else 16
		/* 9 */ load(offsetNr),
		/* 10 */ jeq(c.compatSocket, 3, 0), // socket: 14
		/* 11 */ jeq(c.compatSocketcall, 2, 0), // socketcall: 14
		/* 12 */ jeq(c.compatIO, 4, 0), // io_uring_setup: 17
		/* 13 */ ret(unix.SECCOMP_RET_ALLOW),
		/* 14 */ load(offsetArg0Low), // an int: the kernel reads the low word only
		/* 15 */ jeq(afUnix, 1, 0), // AF_UNIX: 17
		/* 16 */ ret(unix.SECCOMP_RET_ALLOW),
		/* 17 */ ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)),
	}
}

// filterUnixSockets installs unixSocketFilter on the calling thread.
func filterUnixSockets() error {
	calls, ok := socketCallsFor(runtime.GOARCH)
	if !ok {
		return fmt.Errorf("no socket filter for %s", runtime.GOARCH)
	}
	return installFilter(unixSocketFilter(calls))
}
