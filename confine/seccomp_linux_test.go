//go:build linux

package confine

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// runFilter runs a seccomp program on one call in x/net/bpf's VM, which
// loads words big-endian: the seccomp_data is laid out that way here, at
// the kernel's offsets.
func runFilter(t *testing.T, prog []unix.SockFilter, arch, nr uint32, arg0 uint64) uint32 {
	t.Helper()
	raw := make([]bpf.Instruction, len(prog))
	for i, f := range prog {
		raw[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble()
	}
	vm, err := bpf.NewVM(raw)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[offsetNr:], nr)
	binary.BigEndian.PutUint32(data[offsetArch:], arch)
	binary.BigEndian.PutUint32(data[offsetArg0Low:], uint32(arg0))
	binary.BigEndian.PutUint32(data[offsetArg0Hi:], uint32(arg0>>32))
	out, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(out)
}

// The Unix-socket filter refuses socket(AF_UNIX) and io_uring_setup in
// every ABI a process of this GOARCH can use, and nothing else.
func TestUnixSocketFilterRefusesOnlyUnixSocketsAndIOUring(t *testing.T) {
	const allow, deny = unix.SECCOMP_RET_ALLOW, unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	for _, goarch := range []string{"amd64", "arm64"} {
		c, ok := socketCallsFor(goarch)
		if !ok {
			t.Fatalf("%s has no table", goarch)
		}
		prog := unixSocketFilter(c)
		for _, tc := range []struct {
			what     string
			arch, nr uint32
			arg0     uint64
			want     uint32
		}{
			{"socket(AF_UNIX)", c.arch, c.socket, unix.AF_UNIX, deny},
			{"socket(AF_UNIX) with junk in the high word", c.arch, c.socket, 1<<32 | unix.AF_UNIX, deny},
			{"x32 socket(AF_UNIX)", c.arch, c.socketAlt, unix.AF_UNIX, deny},
			{"socket(AF_INET)", c.arch, c.socket, unix.AF_INET, allow},
			{"socket(AF_INET6)", c.arch, c.socket, unix.AF_INET6, allow},
			{"io_uring_setup", c.arch, c.ioUring, 8, deny},
			{"socketpair-like neighbour", c.arch, c.socket + 12, unix.AF_UNIX, allow},
			{"read", c.arch, 0, unix.AF_UNIX, allow},
			{"compat socket(AF_UNIX)", c.compatArch, c.compatSocket, unix.AF_UNIX, deny},
			{"compat socket(AF_INET)", c.compatArch, c.compatSocket, unix.AF_INET, allow},
			{"compat socketcall(SYS_SOCKET)", c.compatArch, c.compatSocketcall, 1, deny},
			{"compat io_uring_setup", c.compatArch, c.compatIO, 8, deny},
			{"compat write", c.compatArch, 4, unix.AF_UNIX, allow},
			{"another architecture", 0x1234, c.socket, unix.AF_UNIX, allow},
		} {
			if got := runFilter(t, prog, tc.arch, tc.nr, tc.arg0); got != tc.want {
				t.Errorf("%s %s: got %#x, want %#x", goarch, tc.what, got, tc.want)
			}
		}
	}
}
