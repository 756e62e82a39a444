package procs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/proctree"
)

// Reasons Fenix stopped a process group.
const (
	ReasonTimeout      = "timeout"
	ReasonCanceled     = "canceled"
	ReasonStopped      = "stopped"
	ReasonOutputLimit  = "output_limit"
	ReasonProcessLimit = "process_limit"
	ReasonShutdown     = "shutdown"
)

// Shell runs every command line.
const Shell = "/bin/sh"

// gateScript blocks until the worker has applied the resource limits (it
// writes a line to fd 3), then runs the command line in the same shell, so
// the command and all its children inherit the limits. It evaluates the
// line rather than exec a second shell: on a VM an exec of sh costs more
// than a millisecond, as much as the rest of a `true` command. Positional
// parameters are cleared first, so the line sees what `sh -c LINE` gives
// it; only the shell's messages differ ("/bin/sh: 1: eval: x: not found").
const gateScript = `read -r fenix_gate <&3 || exit 125; exec 3<&-; unset fenix_gate; ` + gateRun

// gateRun runs the session's prelude ($2, Spec.Prelude) and then the
// command line ($1) in one shell, so what the prelude exports the
// command sees.
const gateRun = `eval "set --; $2` + "\n" + `$1"`

// Limits bound what a command may consume. Zero fields are not enforced.
type Limits struct {
	// MaxProcesses caps the processes in the command's process group.
	MaxProcesses int
	// MaxFileBytes is RLIMIT_FSIZE: the largest file the command may write.
	MaxFileBytes int64
	// CPUSeconds is RLIMIT_CPU, per process.
	CPUSeconds int
	// MaxOpenFiles is RLIMIT_NOFILE.
	MaxOpenFiles int
	// MaxMemoryBytes is RLIMIT_AS, per process. Runtimes that reserve large
	// address ranges (Go, the JVM) need generous values.
	MaxMemoryBytes int64
	// MaxOutputBytes kills the group once stdout and stderr together exceed it.
	MaxOutputBytes int64
	// DiskReserveBytes kills the group once a filesystem it writes to
	// (its working directory's, its TMPDIR's, Spec.KeepFree's) has less
	// free space than this (or than half of what it had at the start,
	// where that was less): a command cannot fill the disk the worker,
	// its audit log and the host need.
	DiskReserveBytes int64
}

// Spec describes one command.
type Spec struct {
	CommandLine string
	Dir         string
	// Env is the complete environment; nothing is inherited from the worker.
	Env    []string
	Limits Limits
	// KeepBytes is how much of each stream's tail is kept (default 1 MiB).
	KeepBytes int
	// CombineOutput sends stderr into the stdout stream (for services,
	// whose log reads best interleaved).
	CombineOutput bool
	// LogPath, when set, also receives all output, up to LogMaxBytes.
	LogPath     string
	LogMaxBytes int64
	// KeepFree are directories on whose filesystems the command must leave
	// Limits.DiskReserveBytes free besides its own and its TMPDIR's and
	// log's: the worker's data directory, where its run records go.
	KeepFree []string
	// WatchInterval is how often the watchdog samples the group's process
	// count and its disks' free space (default 50ms).
	WatchInterval time.Duration
	// User, when set, is who the command runs as (its uid and gid, no
	// supplementary groups); else it runs as the worker.
	User *User
	// Prelude, when set, is shell lines run in the command's shell just
	// before CommandLine (the session's $CLAUDE_ENV_FILE lines): what
	// they export, the command sees.
	Prelude string
	// Confiner, when set, starts the shell in a Landlock domain that keeps
	// it and everything it starts out of the worker's own files; Workspace
	// is the command's workspace, which it always reaches. The commands of
	// one SignalGroup (a conversation's) in one workspace share the
	// domain, so each can signal the processes of the others (a service an
	// earlier call started); "" gives the command a domain of its own.
	Confiner    *confine.Confiner
	Workspace   string
	SignalGroup string
	// NetworkAsk, when set, is asked about a host the sandbox's network
	// policy neither allows nor denies (confine.Confiner.StartCommand)
	// instead of refusing it.
	NetworkAsk netguard.Asker
	// ReadOnly are paths relative to Workspace that the command may read
	// but not write, replace or remove, where the Confiner can hold it to
	// that (confine.CommandOptions.ReadOnly): what governs the agent.
	ReadOnly []string
	// BeforeRun, when set, is called once the shell exists, its limits are
	// in place and its group identity is known, but before the command
	// line runs: a registry records the run here, so nothing runs that a
	// restarted worker could not find. An error kills the shell and Start
	// returns it; the command never runs.
	BeforeRun func(*Process) error
}

// Exit describes how a command ended.
type Exit struct {
	// Code is the exit status, or 128+N when signal N ended the shell, as
	// shells report it.
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
	// Reason says why Fenix stopped it (a limit, a cancel), or that the
	// kernel did (ReasonOutOfMemory); empty when it exited on its own.
	Reason    string    `json:"reason,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
}

// Process is a running command and its process group.
type Process struct {
	spec    Spec
	cmd     *exec.Cmd
	pid     int
	ident   GroupIdentity
	started time.Time
	stdout  *Tail
	stderr  *Tail
	log     *cappedLog
	// cgroup holds everything the command starts, in its process group or
	// not (setsid); nil where no cgroup v2 can be made (see proctree).
	cgroup *proctree.Cgroup
	// releaseStarter is called once the shell was waited for: it ends the
	// thread that confined and started it (see confine.Confiner.Start).
	releaseStarter func()

	mu     sync.Mutex
	reason string
	// oomKillsAtStart is the host's out-of-memory kill count when the
	// command was let past its gate (proctree.OOMKills).
	oomKillsAtStart int64
	reaped          bool // once set, the group ID may be reused: never signal it again
	exit            Exit

	done chan struct{}
}

// ErrUnsupported is returned where process groups and prlimit are missing.
var ErrUnsupported = errors.New("running commands needs Linux (process groups, prlimit, /proc)")

// Start runs spec.CommandLine with sh -c in a new process group. The
// shell waits at a start gate until the limits are applied and BeforeRun
// agreed, so nothing of the command runs unguarded.
func Start(spec Spec) (*Process, error) {
	if !supported {
		return nil, ErrUnsupported
	}
	if spec.CommandLine == "" {
		return nil, errors.New("command line is empty")
	}
	spec = spec.withDefaults()
	files, err := openStartFiles(spec)
	if err != nil {
		return nil, err
	}
	gate := gateScript
	if spec.User != nil {
		if gate, err = userGateScript(spec.Limits); err != nil {
			files.closeAll()
			return nil, err
		}
	}
	cmd := exec.Command(Shell, "-c", gate, Shell, spec.CommandLine, spec.Prelude)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Stdout = files.outW
	cmd.Stderr = files.errW
	cmd.ExtraFiles = []*os.File{files.gateR}
	cmd.SysProcAttr = sysProcAttr()
	if spec.User != nil {
		cmd.SysProcAttr.Credential = spec.User.credential()
	}
	cg, err := proctree.New(proctree.Parent(), proctree.PrefixCommand)
	if err == nil {
		cg.Attach(cmd.SysProcAttr)
	}
	release, err := startShell(cmd, spec)
	if err != nil {
		files.closeAll()
		if cg != nil {
			cg.Close()
		}
		if spec.User != nil {
			return nil, fmt.Errorf("starting %s as %s in %s: %w (the account must be able to enter the directory and run the shell)", Shell, spec.User, spec.Dir, err)
		}
		return nil, fmt.Errorf("starting %s: %w", Shell, err)
	}
	files.closeChildEnds()

	p := &Process{
		spec:           spec,
		cmd:            cmd,
		pid:            cmd.Process.Pid,
		ident:          identify(cmd.Process.Pid),
		started:        time.Now(),
		stdout:         NewTail(spec.KeepBytes),
		stderr:         NewTail(spec.KeepBytes),
		log:            files.log,
		cgroup:         cg,
		releaseStarter: release,
		done:           make(chan struct{}),
	}
	if err := p.guard(); err != nil {
		p.abortAtGate(files)
		return nil, err
	}
	p.openGate(files)
	return p, nil
}

// startShell starts the shell, confined when spec says so; release is
// called once the shell was reaped.
func startShell(cmd *exec.Cmd, spec Spec) (release func(), err error) {
	if spec.Confiner != nil {
		return spec.Confiner.StartCommand(cmd, confine.CommandOptions{Workspace: spec.Workspace, Group: spec.SignalGroup, Ask: spec.NetworkAsk, ReadOnly: spec.ReadOnly})
	}
	return func() {}, cmd.Start()
}

// withDefaults fills in the unset fields of spec.
func (spec Spec) withDefaults() Spec {
	if spec.KeepBytes <= 0 {
		spec.KeepBytes = 1 << 20
	}
	if spec.WatchInterval <= 0 {
		spec.WatchInterval = 50 * time.Millisecond
	}
	if spec.Env == nil {
		spec.Env = []string{}
	}
	return spec
}

// startFiles are the pipes and the log a process starts with. The shell
// reads one line from the gate pipe before it runs the command.
type startFiles struct {
	combined     bool
	gateR, gateW *os.File
	outR, outW   *os.File
	// errR and errW are outR and outW when output is combined.
	errR, errW *os.File
	log        *cappedLog
	opened     []*os.File
}

func openStartFiles(spec Spec) (*startFiles, error) {
	f := &startFiles{combined: spec.CombineOutput}
	pipe := func(what string) (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			f.closeAll()
			return nil, nil, fmt.Errorf("creating the %s pipe: %w", what, err)
		}
		f.opened = append(f.opened, r, w)
		return r, w, nil
	}
	var err error
	if f.gateR, f.gateW, err = pipe("start gate"); err != nil {
		return nil, err
	}
	if f.outR, f.outW, err = pipe("stdout"); err != nil {
		return nil, err
	}
	f.errR, f.errW = f.outR, f.outW
	if !f.combined {
		if f.errR, f.errW, err = pipe("stderr"); err != nil {
			return nil, err
		}
	}
	if spec.LogPath != "" {
		lf, err := os.OpenFile(spec.LogPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			f.closeAll()
			return nil, fmt.Errorf("creating the output log %s: %w", spec.LogPath, err)
		}
		f.log = &cappedLog{f: lf, max: spec.LogMaxBytes}
	}
	return f, nil
}

// closeAll closes everything, when the shell did not start.
func (f *startFiles) closeAll() {
	for _, file := range f.opened {
		file.Close()
	}
	f.log.Close()
}

// closeChildEnds closes the ends the started shell holds its own copies of.
func (f *startFiles) closeChildEnds() {
	f.gateR.Close()
	f.outW.Close()
	if !f.combined {
		f.errW.Close()
	}
}

// guard applies the resource limits and asks BeforeRun, while the shell
// waits at the gate. A command user's shell sets its own limits past
// the gate (userGateScript): prlimit on another user's process needs
// CAP_SYS_RESOURCE.
func (p *Process) guard() error {
	// The command, not the worker, is what the kernel kills first when
	// memory runs out; best effort, since only a missing /proc fails it.
	_ = proctree.PreferOOMKill(p.pid)
	p.oomKillsAtStart = proctree.OOMKills()
	if p.spec.User == nil {
		if err := applyLimits(p.pid, p.spec.Limits); err != nil {
			return fmt.Errorf("applying resource limits: %w", err)
		}
	}
	if p.spec.BeforeRun != nil {
		return p.spec.BeforeRun(p)
	}
	return nil
}

// abortAtGate kills the shell still waiting at the gate: nothing of the
// command ran.
func (p *Process) abortAtGate(f *startFiles) {
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	f.gateW.Close()
	_ = p.cmd.Wait()
	p.releaseStarter()
	if p.cgroup != nil {
		p.cgroup.Close()
	}
	f.outR.Close()
	if !f.combined {
		f.errR.Close()
	}
	f.log.Close()
}

// openGate starts reading the output and the watchdogs, then lets the
// command run: it starts with every guard in place.
func (p *Process) openGate(f *startFiles) {
	var readers sync.WaitGroup
	readers.Add(1)
	go p.pump(f.outR, p.stdout, &readers)
	if !f.combined {
		readers.Add(1)
		go p.pump(f.errR, p.stderr, &readers)
	}
	go p.supervise(f.outR, f.errR, &readers)
	if disks := diskWatches(p.spec); p.spec.Limits.MaxProcesses > 0 || len(disks) > 0 {
		go p.watchLimits(disks)
	}
	if _, err := io.WriteString(f.gateW, "go\n"); err != nil {
		p.Kill(ReasonStopped)
	}
	f.gateW.Close()
}

// PID is the process ID of the group leader, which is also the group ID.
func (p *Process) PID() int { return p.pid }

// Identity is what recognises the process group after this worker is
// gone (see GroupIdentity).
func (p *Process) Identity() GroupIdentity { return p.ident }

// StartedAt is when the command started.
func (p *Process) StartedAt() time.Time { return p.started }

// Done is closed once the command and its group are gone and the output
// is drained.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit reports how the command ended; valid after Done.
func (p *Process) Exit() Exit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// Running reports whether Done is still open.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stdout is the stdout tail (with CombineOutput, all output).
func (p *Process) Stdout() *Tail { return p.stdout }

// Stderr is the stderr tail (empty with CombineOutput).
func (p *Process) Stderr() *Tail { return p.stderr }

// LogDropped is how many output bytes the log file did not take.
func (p *Process) LogDropped() int64 { return p.log.Dropped() }

// Stop ends the group: SIGTERM, then SIGKILL after grace. It returns once
// the command is gone. The first reason given is the one reported.
func (p *Process) Stop(reason string, grace time.Duration) {
	p.setReason(reason)
	p.signalGroup(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return
	case <-timer.C:
	}
	p.signalGroup(syscall.SIGKILL)
	<-p.done
}

// Kill sends SIGKILL to the group without waiting.
func (p *Process) Kill(reason string) {
	p.setReason(reason)
	p.signalGroup(syscall.SIGKILL)
}

func (p *Process) setReason(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reason == "" && !p.reaped {
		p.reason = reason
	}
}

// signalGroup signals every process in the group. It is safe only while
// the leader is unreaped: a zombie leader still pins the group ID, so the
// signal cannot reach an unrelated group that reused the number.
func (p *Process) signalGroup(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		_ = syscall.Kill(-p.pid, sig)
		if sig == syscall.SIGKILL && p.cgroup != nil {
			_ = p.cgroup.Kill()
		}
	}
}

func (p *Process) pump(r *os.File, tail *Tail, readers *sync.WaitGroup) {
	defer readers.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			tail.Write(buf[:n])
			p.log.Write(buf[:n])
			if lim := p.spec.Limits.MaxOutputBytes; lim > 0 && p.stdout.Total()+p.stderr.Total() > lim {
				p.Kill(ReasonOutputLimit)
			}
		}
		if err != nil {
			return
		}
	}
}

// groupExitTimeout bounds the wait for killed group members to die; a
// process stuck in uninterruptible sleep dies when its I/O returns.
const groupExitTimeout = 2 * time.Second

// GroupSize counts the processes, zombies included, in process group pgid.
func GroupSize(pgid int) int { return groupSize(pgid, false) }

// LiveGroupSize counts the processes in process group pgid that have not
// exited.
func LiveGroupSize(pgid int) int { return groupSize(pgid, true) }

// drainTimeout bounds how long output is read after the group is dead; a
// process that escaped the group may hold the pipes open forever.
const drainTimeout = 2 * time.Second

func (p *Process) supervise(outR, errR *os.File, readers *sync.WaitGroup) {
	waitErr := waitExitedNoReap(p.pid)

	if waitErr == nil {
		p.killLeftBehind()
	}
	p.mu.Lock()
	_ = p.cmd.Wait()
	p.reaped = true
	p.mu.Unlock()
	p.releaseStarter()

	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		_ = outR.SetReadDeadline(time.Now())
		_ = errR.SetReadDeadline(time.Now())
		<-drained
	}
	outR.Close()
	if errR != outR {
		errR.Close()
	}
	p.log.Close()
	oomKills := int64(-1)
	if p.cgroup != nil {
		oomKills = p.cgroup.OOMKills()
		p.cgroup.Close()
	}

	exit := Exit{StartedAt: p.started, EndedAt: time.Now()}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		exit.Code = 128 + int(ws.Signal())
		exit.Signal = signalName(ws.Signal())
	} else {
		exit.Code = p.cmd.ProcessState.ExitCode()
	}
	p.mu.Lock()
	exit.Reason = p.reason
	if exit.Reason == "" && exit.Code == 128+int(syscall.SIGKILL) && p.killedForMemory(oomKills) {
		exit.Reason = ReasonOutOfMemory
	}
	p.exit = exit
	p.mu.Unlock()
	close(p.done)
}

// killLeftBehind kills whatever the exited leader left behind and waits
// for it to die before the leader is reaped, so Done means it is gone.
// The leader is a zombie, so the group ID is still ours. The cgroup also
// holds what left the group, and says at once whether anything is left;
// without one, the group is counted in /proc.
func (p *Process) killLeftBehind() {
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	if p.cgroup != nil && p.cgroup.Kill() == nil {
		p.cgroup.WaitEmpty(groupExitTimeout)
		return
	}
	deadline := time.Now().Add(groupExitTimeout)
	for groupSize(p.pid, true) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
}

// processCount is the command's process count: the cgroup's members,
// else its process group's.
func (p *Process) processCount() int {
	if p.cgroup != nil {
		if n, err := p.cgroup.Processes(); err == nil {
			return n
		}
	}
	return groupSize(p.pid, false)
}

// watchLimits samples what the kernel does not bound for a group: its
// process count (beyond RLIMIT_NPROC, which counts the user's) and the
// free space of the disks it writes to.
func (p *Process) watchLimits(disks []diskWatch) {
	ticker := time.NewTicker(p.spec.WatchInterval)
	defer ticker.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-ticker.C:
			if max := p.spec.Limits.MaxProcesses; max > 0 && p.processCount() > max {
				p.Kill(ReasonProcessLimit)
			}
			if belowFloor(disks) {
				p.Kill(ReasonDiskReserve)
			}
		}
	}
}

// cappedLog writes output to a file until max bytes, then counts what it
// drops. A nil *cappedLog does nothing.
type cappedLog struct {
	mu      sync.Mutex
	f       *os.File
	max     int64
	written int64
	dropped int64
}

func (l *cappedLog) Write(p []byte) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		l.dropped += int64(len(p))
		return
	}
	room := l.max - l.written
	if l.max <= 0 {
		room = int64(len(p))
	}
	if room < int64(len(p)) {
		l.dropped += int64(len(p)) - max(room, 0)
		p = p[:max(room, 0)]
	}
	if len(p) > 0 {
		n, _ := l.f.Write(p)
		l.written += int64(n)
	}
}

func (l *cappedLog) Dropped() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

func (l *cappedLog) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
