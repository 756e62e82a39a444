//go:build linux

package procs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/proctree"
)

func TestLookupUser(t *testing.T) {
	for _, c := range []struct {
		spec     string
		uid, gid uint32
		wantErr  string
	}{
		{spec: "nobody", uid: 65534, gid: 65534},
		{spec: "65534", uid: 65534, gid: 65534},
		{spec: "4321", uid: 4321, gid: 4321},
		{spec: "4321:99", uid: 4321, gid: 99},
		{spec: " nobody ", uid: 65534, gid: 65534},
		{spec: "root", wantErr: "is root"},
		{spec: "0:0", wantErr: "is root"},
		{spec: "no-such-account-here", wantErr: "no-such-account-here"},
		{spec: "4321:staff", wantErr: "not a number"},
		{spec: "", wantErr: "empty"},
	} {
		u, err := LookupUser(c.spec)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("LookupUser(%q) = %v, %v: want an error with %q", c.spec, u, err, c.wantErr)
			}
			continue
		}
		if err != nil || u.UID != c.uid || u.GID != c.gid {
			t.Errorf("LookupUser(%q) = %v, %v: want uid %d gid %d", c.spec, u, err, c.uid, c.gid)
		}
	}
}

// A command run as the command user is that user with no supplementary
// groups, and cannot do what the worker's own user could: write the
// worker's files, signal the worker, or leave its run's cgroup. The same
// script as the worker does the first two, which shows the checks bite.
func TestCommandsRunAsTheCommandUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("running commands as another user needs root here")
	}
	u, err := LookupUser("65534")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckRunAs(u); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "fenix-command-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	governing := filepath.Join(dir, "guard.sh")
	if err := os.WriteFile(governing, []byte("#!/bin/sh\nexit 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	escape := "/sys/fs/cgroup/cgroup.procs"
	if parent := proctree.Parent(); parent != "" {
		escape = filepath.Join(parent, "cgroup.procs")
	}
	script := strings.Join([]string{
		"id -u; id -g; id -G",
		"(echo 'exit 0' > " + governing + ") 2>/dev/null && echo wrote || echo no-write",
		"kill -0 " + strconv.Itoa(os.Getpid()) + " 2>/dev/null && echo signalled || echo no-signal",
	}, "\n")
	p, exit, _ := run(t, Spec{CommandLine: script + "\n(echo $$ > " + escape + ") 2>/dev/null && echo escaped || echo stayed", Dir: dir, User: u}, 10*time.Second)
	got := strings.Fields(stdout(p))
	want := []string{"65534", "65534", "65534", "no-write", "no-signal", "stayed"}
	if exit.Code != 0 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("as %s: exit %d, output %q, want %q", u, exit.Code, got, want)
	}
	if b, _ := os.ReadFile(governing); string(b) != "#!/bin/sh\nexit 2\n" {
		t.Errorf("guard.sh = %q, want it unchanged", b)
	}

	// Its limits hold: the gate shell set them before the line ran.
	limits := Limits{MaxFileBytes: 1 << 20, CPUSeconds: 7, MaxOpenFiles: 100, MaxMemoryBytes: 1 << 30}
	p, exit, _ = run(t, Spec{CommandLine: "ulimit -f; ulimit -t; ulimit -H -t; ulimit -n; ulimit -v; head -c 2000000 /dev/zero > /tmp/fenix-fsize-$$ || echo too-big; rm -f /tmp/fenix-fsize-$$", Dir: "/", User: u, Limits: limits}, 10*time.Second)
	if got, want := strings.Fields(stdout(p)), "2048 7 12 100 1048576 too-big"; strings.Join(got, " ") != want {
		t.Errorf("limits as %s: exit %d, output %q, want %q", u, exit.Code, got, want)
	}

	// The session's prelude runs in the command user's shell too, under
	// the same limits, before the line.
	p, exit, _ = run(t, Spec{CommandLine: `echo "$(id -u) $SESSION_STAGE $(ulimit -n)"`, Prelude: "export SESSION_STAGE=prelude\n[ \"$(id -u)\" = 65534 ] || echo prelude-ran-as-$(id -u)",
		Dir: "/", User: u, Limits: Limits{MaxOpenFiles: 100}}, 10*time.Second)
	if got := strings.TrimSpace(stdout(p)); exit.Code != 0 || got != "65534 prelude 100" {
		t.Errorf("prelude as %s: exit %d, output %q, want %q", u, exit.Code, got, "65534 prelude 100")
	}

	// The worker still stops what runs as the command user.
	sleeper, err := Start(Spec{CommandLine: "sleep 30 & sleep 30", Dir: dir, User: u, Env: testEnv()})
	if err != nil {
		t.Fatal(err)
	}
	sleeper.Stop(ReasonStopped, time.Second)
	select {
	case <-sleeper.Done():
		assertGroupGone(t, sleeper)
	case <-time.After(5 * time.Second):
		t.Fatalf("a command run as %s was not stopped", u)
	}

	p, _, _ = run(t, Spec{CommandLine: script, Dir: dir}, 10*time.Second)
	got = strings.Fields(stdout(p))
	if len(got) < 2 || got[len(got)-2] != "wrote" || got[len(got)-1] != "signalled" {
		t.Errorf("as the worker: output %q, want it to write and signal", got)
	}
}

func stdout(p *Process) string {
	b, _ := p.Stdout().Last(1 << 16)
	return string(b)
}

// What running as the command user adds to a command: the credential
// switch at fork and the gate's ulimit builtins, against prlimit from the
// worker.
//
//	go test -run '^$' -bench CommandUser -benchtime 200x ./tools/procs
func BenchmarkCommandUser(b *testing.B) {
	u, err := LookupUser("65534")
	if err != nil || os.Getuid() != 0 {
		b.Skip("needs root and the nobody uid")
	}
	for _, c := range []struct {
		name string
		user *User
	}{{"worker", nil}, {"command-user", u}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				p, err := Start(Spec{CommandLine: "true", Dir: "/", User: c.user, Env: testEnv(), Limits: Limits{MaxOpenFiles: 256}})
				if err != nil {
					b.Fatal(err)
				}
				<-p.Done()
			}
		})
	}
}
