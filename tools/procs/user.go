package procs

import (
	"fmt"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// User is who commands run as when the worker runs them as an account of
// their own (FENIX_COMMAND_USER) rather than as itself.
//
// A command of the worker's own user can do whatever the worker's files
// allow: rewrite the hook scripts and settings that govern it, edit the
// audit database and the command-run records in the data directory, read
// the Temporal client's certificate and key (and so answer its own
// approval), signal the worker, and move itself out of its cgroup. Run as
// another user, it can do none of that unless the operator's file modes
// grant it.
type User struct {
	// Name is the account as configured, for messages.
	Name     string
	UID, GID uint32
}

// LookupUser resolves an account name, or a numeric "uid" or "uid:gid"
// (the gid defaulting to the account's or, with no account, the uid).
// Root is refused: it would hand commands every privilege the worker
// dropped them from.
func LookupUser(spec string) (*User, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("command user is empty")
	}
	uidPart, gidPart, hasGID := strings.Cut(spec, ":")
	u := &User{Name: spec}
	if uid, err := strconv.ParseUint(uidPart, 10, 32); err == nil {
		u.UID, u.GID = uint32(uid), uint32(uid)
		if acct, err := user.LookupId(uidPart); err == nil {
			if gid, err := strconv.ParseUint(acct.Gid, 10, 32); err == nil {
				u.GID = uint32(gid)
			}
		}
	} else {
		acct, err := user.Lookup(uidPart)
		if err != nil {
			return nil, fmt.Errorf("command user %q: %w", spec, err)
		}
		uid, err1 := strconv.ParseUint(acct.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(acct.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("command user %q has a non-numeric uid %q or gid %q", spec, acct.Uid, acct.Gid)
		}
		u.UID, u.GID = uint32(uid), uint32(gid)
	}
	if hasGID {
		gid, err := strconv.ParseUint(gidPart, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("command user %q: group %q is not a number", spec, gidPart)
		}
		u.GID = uint32(gid)
	}
	if u.UID == 0 {
		return nil, fmt.Errorf("command user %q is root: commands would get every privilege; name an unprivileged account", spec)
	}
	return u, nil
}

// String names the account and its IDs.
func (u *User) String() string { return fmt.Sprintf("%s (uid %d, gid %d)", u.Name, u.UID, u.GID) }

// credential is what the child switches to before it execs the shell:
// the user's uid and gid and no supplementary groups (the worker's would
// otherwise carry over). The kernel drops every capability with the
// switch away from root.
func (u *User) credential() *syscall.Credential {
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
}

// CheckRunAs runs a command as u the way a tool runs one (limits
// applied, in its cgroup) and checks it ran as u, so a worker that cannot
// (not root, or lacking CAP_SETUID, CAP_SETGID and CAP_KILL) says so at
// start instead of failing every call.
func CheckRunAs(u *User) error {
	p, err := Start(Spec{CommandLine: "id -u", Dir: "/", User: u, Limits: Limits{MaxProcesses: 4, MaxOpenFiles: 64}})
	if err != nil {
		return fmt.Errorf("the worker cannot run commands as %s: %w", u, err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		p.Kill("probe")
		return fmt.Errorf("a probe command run as %s did not end within 10s", u)
	}
	out, _ := p.Stdout().Last(256)
	errOut, _ := p.Stderr().Last(1024)
	if exit := p.Exit(); exit.Code != 0 || strings.TrimSpace(string(out)) != strconv.FormatUint(uint64(u.UID), 10) {
		return fmt.Errorf("the worker cannot run commands as %s (it must be root or hold CAP_SETUID, CAP_SETGID and CAP_KILL): a probe `id -u` exited %d with %q, stderr %q", u, exit.Code, strings.TrimSpace(string(out)), strings.TrimSpace(string(errOut)))
	}
	return nil
}
