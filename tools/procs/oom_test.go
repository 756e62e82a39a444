//go:build linux

package procs

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/internal/harness/scarce"
)

// The kernel picks a command, not the worker, when memory runs out: its
// processes start with the highest oom_score_adj.
func TestCommandsAreTheFirstToGoWhenMemoryRunsOut(t *testing.T) {
	p, exit, _ := run(t, Spec{CommandLine: "cat /proc/self/oom_score_adj"}, 10*time.Second)
	require.Equal(t, 0, exit.Code)
	out, _ := p.Stdout().Last(100)
	assert.Equal(t, "1000", strings.TrimSpace(string(out)))
	own, err := os.ReadFile("/proc/self/oom_score_adj")
	require.NoError(t, err)
	assert.NotEqual(t, "1000", strings.TrimSpace(string(own)), "the worker's own score changed")
}

// A command the out-of-memory killer ends says so: the shell, or its
// last command, died of SIGKILL while the kernel killed for memory. The
// command moves itself into a memory cgroup of 32 MiB and asks for 256.
func TestACommandKilledForMemorySaysSo(t *testing.T) {
	cg := scarce.Memory(t, 32<<20)
	line := "echo $$ > " + scarce.Procs(cg) + " && dd if=/dev/zero of=/dev/null bs=256M count=1 2>/dev/null; echo after $?"
	_, exit, _ := run(t, Spec{CommandLine: line}, 30*time.Second)
	// dd dies; the shell goes on and reports its status (137), then exits 0.
	require.Equal(t, 0, exit.Code, "the shell itself was not the victim")
	_, exit, _ = run(t, Spec{CommandLine: "echo $$ > " + scarce.Procs(cg) + " && exec dd if=/dev/zero of=/dev/null bs=256M count=1"}, 30*time.Second)
	assert.Equal(t, 137, exit.Code)
	assert.Equal(t, ReasonOutOfMemory, exit.Reason)

	_, exit, _ = run(t, Spec{CommandLine: "kill -KILL $$"}, 10*time.Second)
	assert.Equal(t, 137, exit.Code)
	assert.Empty(t, exit.Reason, "a SIGKILL with no out-of-memory kill is not taken for one")
}
