//go:build linux

package confine

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// runFilter runs a seccomp program on one call in x/net/bpf's VM, which
// loads words big-endian: the seccomp_data is laid out that way here, at
// the kernel's offsets.
func runFilter(t *testing.T, prog []unix.SockFilter, arch, nr uint32, arg0, arg1 uint64) uint32 {
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
	binary.BigEndian.PutUint32(data[offsetArg1Low:], uint32(arg1))
	out, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(out)
}

// The socket filter refuses io_uring_setup and the sockets asked for in
// every ABI a process of this GOARCH can use, and nothing else.
func TestSocketFilterRefusesOnlyWhatItIsAskedTo(t *testing.T) {
	const allow, deny uint32 = unix.SECCOMP_RET_ALLOW, unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	for _, goarch := range []string{"amd64", "arm64"} {
		c, ok := socketCallsFor(goarch)
		if !ok {
			t.Fatalf("%s has no table", goarch)
		}
		for _, refuse := range []socketRefusals{{unix: true}, {unix: true, datagram: true}, {datagram: true}} {
			prog := socketFilter(c, refuse)
			unixV, dgramV := allow, allow
			if refuse.unix {
				unixV = deny
			}
			if refuse.datagram {
				dgramV = deny
			}
			for _, tc := range []struct {
				what       string
				arch, nr   uint32
				arg0, arg1 uint64
				want       uint32
			}{
				{"socket(AF_UNIX)", c.arch, c.socket, unix.AF_UNIX, unix.SOCK_STREAM, unixV},
				{"socket(AF_UNIX) with junk in the high word", c.arch, c.socket, 1<<32 | unix.AF_UNIX, unix.SOCK_STREAM, unixV},
				{"x32 socket(AF_UNIX)", c.arch, c.socketAlt, unix.AF_UNIX, unix.SOCK_DGRAM, unixV},
				{"socket(AF_INET, SOCK_STREAM)", c.arch, c.socket, unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, allow},
				{"socket(AF_INET6, SOCK_STREAM)", c.arch, c.socket, unix.AF_INET6, unix.SOCK_STREAM, allow},
				{"socket(AF_INET, SOCK_DGRAM|SOCK_NONBLOCK)", c.arch, c.socket, unix.AF_INET, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, dgramV},
				{"socket(AF_INET6, SOCK_DGRAM)", c.arch, c.socket, unix.AF_INET6, unix.SOCK_DGRAM, dgramV},
				{"socket(AF_INET, SOCK_RAW)", c.arch, c.socket, unix.AF_INET, unix.SOCK_RAW, dgramV},
				{"socket(AF_NETLINK, SOCK_DGRAM)", c.arch, c.socket, unix.AF_NETLINK, unix.SOCK_DGRAM, allow},
				{"io_uring_setup", c.arch, c.ioUring, 8, 0, deny},
				{"a neighbouring call", c.arch, c.socket + 12, unix.AF_UNIX, 0, allow},
				{"read", c.arch, 0, unix.AF_UNIX, 0, allow},
				{"compat socket(AF_UNIX)", c.compatArch, c.compatSocket, unix.AF_UNIX, unix.SOCK_STREAM, unixV},
				{"compat socket(AF_INET, SOCK_STREAM)", c.compatArch, c.compatSocket, unix.AF_INET, unix.SOCK_STREAM, allow},
				{"compat socket(AF_INET, SOCK_DGRAM)", c.compatArch, c.compatSocket, unix.AF_INET, unix.SOCK_DGRAM, dgramV},
				{"compat io_uring_setup", c.compatArch, c.compatIO, 8, 0, deny},
				{"compat write", c.compatArch, 4, unix.AF_UNIX, 0, allow},
				{"another architecture", 0x1234, c.socket, unix.AF_UNIX, 0, allow},
			} {
				if got := runFilter(t, prog, tc.arch, tc.nr, tc.arg0, tc.arg1); got != tc.want {
					t.Errorf("%s %+v %s: got %#x, want %#x", goarch, refuse, tc.what, got, tc.want)
				}
			}
			if goarch == "amd64" {
				// i386's socketcall: SYS_SOCKET (1) is refused whatever it
				// creates, SYS_BIND (2, also AF_INET's number) is not.
				if got := runFilter(t, prog, c.compatArch, c.compatSocketcall, 1, 0); got != deny {
					t.Errorf("%+v socketcall(SYS_SOCKET): got %#x", refuse, got)
				}
				if got := runFilter(t, prog, c.compatArch, c.compatSocketcall, 2, uint64(unix.SOCK_DGRAM)); got != allow {
					t.Errorf("%+v socketcall(SYS_BIND): got %#x", refuse, got)
				}
			}
		}
	}
}

// The command filter refuses prlimit64 on another process and the
// keyring calls in every ABI a process of this GOARCH can use, and
// nothing else.
func TestCommandFilterRefusesOnlyWhatItShould(t *testing.T) {
	const allow, deny uint32 = unix.SECCOMP_RET_ALLOW, unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	for _, goarch := range []string{"amd64", "arm64"} {
		c, ok := filteredCallsFor(goarch)
		if !ok {
			t.Fatalf("%s has no table", goarch)
		}
		prog := commandFilter(c)
		type call struct {
			what     string
			arch, nr uint32
			arg0     uint64
			want     uint32
		}
		calls := []call{
			{"prlimit64 of itself", c.arch, c.nr, 0, allow},
			{"prlimit64 of another", c.arch, c.nr, 42, deny},
			{"prlimit64 of a PID with its high word set", c.arch, c.nr, 1 << 32, deny},
			{"x32 prlimit64 of another", c.arch, c.nrAlt, 42, deny},
			{"compat prlimit64 of itself", c.compatArch, c.compatNr, 0, allow},
			{"compat prlimit64 of another", c.compatArch, c.compatNr, 42, deny},
			{"another call", c.arch, c.nr + 1, 42, allow},
			{"another compat call", c.compatArch, c.compatNr + 1, 42, allow},
			{"another architecture", 0x1234, c.keys[0], 42, allow},
		}
		for _, nr := range c.keys {
			calls = append(calls, call{fmt.Sprintf("keyring call %d", nr), c.arch, nr, 0, deny})
		}
		for _, nr := range c.compatKeys {
			calls = append(calls, call{fmt.Sprintf("compat keyring call %d", nr), c.compatArch, nr, 0, deny})
		}
		for _, tc := range calls {
			if got := runFilter(t, prog, tc.arch, tc.nr, tc.arg0, 0); got != tc.want {
				t.Errorf("%s: %s = %#x, want %#x", goarch, tc.what, got, tc.want)
			}
		}
	}
}
