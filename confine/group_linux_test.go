package confine

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A conversation's commands share a domain: one signals the service an
// earlier one started (`kill $(cat app.pid)`), and still nothing else —
// not another conversation's service, not a command without a group, not
// a hook, not the worker; the confinement itself is the same.
func TestGroupsSignalTheirOwnProcessesOnly(t *testing.T) {
	l := newLayout(t)
	for _, p := range []Policy{{Hidden: []string{l.state}}, {Hidden: []string{l.state}, Boundary: &Boundary{}}} {
		c := newConfiner(t, p)
		if c.ABI() < 6 {
			t.Skipf("Landlock ABI %d does not scope signals (6 does)", c.ABI())
		}
		hook := exec.Command("sleep", "30")
		require.NoError(t, hook.Start())
		service := func(group string) (*exec.Cmd, func()) {
			cmd := exec.Command("sleep", "30")
			release, err := c.StartInGroup(cmd, l.ws, group)
			require.NoError(t, err)
			return cmd, release
		}
		mine, releaseMine := service("conv-a")
		theirs, releaseTheirs := service("conv-b")
		alone := exec.Command("sleep", "30")
		releaseAlone, err := c.Start(alone, l.ws)
		require.NoError(t, err)

		code, out := shIn(t, c, l.ws, "conv-a", fmt.Sprintf(`kill -0 %d && echo reaches-its-conversation
kill -9 %d 2>&1 || echo other-conversation-refused
kill -9 %d 2>&1 || echo ungrouped-refused
kill -9 %d 2>&1 || echo hook-refused
kill -0 %d 2>&1 || echo worker-refused
cat %s 2>&1 || echo still-confined
true`, mine.Process.Pid, theirs.Process.Pid, alone.Process.Pid, hook.Process.Pid, os.Getpid(), l.audit))
		assert.Equal(t, 0, code, out)
		for _, want := range []string{"reaches-its-conversation", "other-conversation-refused", "ungrouped-refused", "hook-refused", "worker-refused", "still-confined"} {
			assert.Contains(t, out, want, "boundary %v", p.Boundary != nil)
		}
		code, out = shIn(t, c, l.ws, "conv-a", fmt.Sprintf("kill -TERM %d && echo stopped-its-service", mine.Process.Pid))
		assert.Equal(t, 0, code, out)
		assert.Contains(t, out, "stopped-its-service")
		err = mine.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, syscall.SIGTERM, exit.Sys().(syscall.WaitStatus).Signal())
		releaseMine()

		for _, p := range []*exec.Cmd{theirs, alone, hook} {
			require.NoError(t, p.Process.Signal(syscall.Signal(0)), "the others are alive")
			require.NoError(t, p.Process.Kill())
			_ = p.Wait()
		}
		releaseTheirs()
		releaseAlone()
	}
}

// A launcher lives while one of its commands does: released, the next
// command of the group gets a new domain (nothing is left to reach), and
// many commands of many groups at once each land in their own.
func TestLaunchersEndWithTheirLastCommand(t *testing.T) {
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}})
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out := shIn(t, c, l.ws, fmt.Sprintf("conv-%d", i%4), "cat "+l.audit+" 2>/dev/null && echo leaked; echo ran")
			assert.Equal(t, 0, code)
			assert.Equal(t, "ran\n", out)
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		c.launchMu.Lock()
		defer c.launchMu.Unlock()
		return len(c.launchers) == 0
	}, 5*time.Second, 10*time.Millisecond, "every launcher ended with its last command")
}

// A group keeps its domain while its launcher lives, even when a leading
// directory changed and the rules were cut again: the conversation's
// next command still reaches the service an earlier one started, and
// misses only the entry added since (no rule reaches it), which a
// command of another group, confined anew, reaches; once the group's
// last process ended its next command gets the new rules too.
func TestAGroupKeepsItsDomainWhenRulesAreCutAgain(t *testing.T) {
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}})
	if c.ABI() < 6 {
		t.Skipf("Landlock ABI %d does not scope signals (6 does)", c.ABI())
	}
	service := exec.Command("sleep", "30")
	release, err := c.StartInGroup(service, l.ws, "conv-a")
	require.NoError(t, err)

	time.Sleep(10 * time.Millisecond)
	late := l.root + "/late.txt"
	require.NoError(t, os.WriteFile(late, []byte("late entry\n"), 0o644))

	code, out := shIn(t, c, l.ws, "conv-a", fmt.Sprintf("kill -0 %d && echo reaches-its-service; cat %s 2>&1 || echo late-entry-unreached", service.Process.Pid, late))
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "reaches-its-service")
	assert.Contains(t, out, "late-entry-unreached")

	code, out = shIn(t, c, l.ws, "conv-b", "cat "+late)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "late entry", "a new domain has the new rules")

	require.NoError(t, service.Process.Kill())
	_ = service.Wait()
	release()
	code, out = shIn(t, c, l.ws, "conv-a", "cat "+late)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "late entry", "the group's next launcher has the new rules")
}
