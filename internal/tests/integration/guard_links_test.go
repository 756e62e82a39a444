package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/workflows"
)

// A human approves a write of docs/notes.md, a symlink to docs/draft.md,
// under the ask rule Write(./docs/**). While the call waits, a process the
// agent left running repoints the link at src/main.go, which no rule asks
// about. The approved write must not land there: ExecuteTool holds the
// open to the file PreToolUse judged. (A read repointed at a file a Read
// deny rule covers is refused at the open too: reads are not asked about,
// so that race is driven in activities' TestOpensAreJudgedWhereTheirLinksLeadAtTheOpen.)
func TestSymlinksRepointedAfterTheVerdictAreNotFollowed(t *testing.T) {
	project := t.TempDir()
	for rel, body := range map[string]string{
		"docs/draft.md": "# draft\n",
		"src/main.go":   "package main\n",
		".claude/settings.json": `{"permissions": {
  "ask": ["Write(./docs/**)"]
}}`,
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(project, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(project, rel), []byte(body), 0o644))
	}
	link := filepath.Join(project, "docs", "notes.md")
	require.NoError(t, os.Symlink("draft.md", link))
	repoint := func(target string) {
		require.NoError(t, os.Remove(link))
		require.NoError(t, os.Symlink(target, link))
	}
	w := startWorker(t, inProject(project))
	write := func(name string, content string) (client.WorkflowRun, string) {
		a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": "workspace_write", "arguments": map[string]any{"path": "docs/notes.md", "content": content}}, "workspace_write")
		a["workspace_root"] = project
		run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, fmt.Sprintf("it-links-%s-%d", name, time.Now().UnixNano()), a)
		pending := awaitPermission(t, run)
		assert.Contains(t, pending.Permission, "Write(./docs/**)")
		return run, "call-" + name
	}
	approve := func(run client.WorkflowRun, callID string) contract.Result {
		decidePermission(t, run, workflows.PermissionDecision{CallID: callID, Decision: workflows.DecisionAllow, DecidedBy: "reviewer"})
		var res contract.Result
		require.NoError(t, run.Get(context.Background(), &res))
		return res
	}

	run, callID := write("write", "package main\n\nfunc init() { panic(\"pwned\") }\n")
	repoint("../src/main.go")
	res := approve(run, callID)
	require.Equal(t, contract.StatusFailed, res.Status, "the approved write ran on src/main.go: %+v", res.Output)
	assert.Equal(t, fenixerr.TypeWorkspaceEscape, res.Error.ErrorType, "%+v", res.Error)
	assert.Equal(t, "path_changed", res.Error.Code, "%+v", res.Error)
	assert.Contains(t, res.Error.LastErrorSummary, `led to "docs/draft.md" when the call's permission was judged and leads to "src/main.go" now`)
	b, err := os.ReadFile(filepath.Join(project, "src", "main.go"))
	require.NoError(t, err)
	assert.Equal(t, "package main\n", string(b), "src/main.go unchanged")

	// Pointed back, the same call goes through once approved.
	repoint("draft.md")
	run, callID = write("write-again", "# notes\n")
	res = approve(run, callID)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	b, err = os.ReadFile(filepath.Join(project, "docs", "draft.md"))
	require.NoError(t, err)
	assert.Equal(t, "# notes\n", string(b))
}
