package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workspace"
)

// TestWorkspaceRootOutsideBasesFailsTheAssignment: an assignment that names
// "/" (or a symlink out of the bases) as its workspace_root fails with an
// authorization error naming FENIX_WORKSPACE_BASES before any tool reads
// /etc/passwd, and a root inside the bases, reached through a symlink,
// still works.
func TestWorkspaceRootOutsideBasesFailsTheAssignment(t *testing.T) {
	base := t.TempDir()
	project := filepath.Join(base, "project")
	require.NoError(t, os.MkdirAll(project, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, "notes.txt"), []byte("inside the base\n"), 0o644))
	require.NoError(t, os.Symlink("/etc", filepath.Join(base, "etc-link")))
	elsewhere := t.TempDir()
	require.NoError(t, os.Symlink(project, filepath.Join(elsewhere, "project-link")))

	w := startWorker(t, func(c *worker.Config) {
		c.WorkspaceBases = []string{base, c.DefaultWorkspaceRoot}
	})

	for name, root := range map[string]string{
		"filesystem root":           "/",
		"symlink out of the base":   filepath.Join(base, "etc-link"),
		"dot-dot out of the base":   filepath.Join(project, "..", ".."),
		"directory beside the base": elsewhere,
	} {
		t.Run(name, func(t *testing.T) {
			a := assignment("bases-"+filepath.Base(root), map[string]any{
				"call_id": "call-passwd", "tool_name": "workspace_read", "arguments": map[string]any{"path": "etc/passwd"},
			})
			a["logical_work_id"] = "bases-" + name
			a["workspace_root"] = root
			res, _ := runAssignment(t, w.queue, a)
			require.Equal(t, contract.StatusFailed, res.Status, "a workspace root outside the bases must fail; output: %+v", res.Output)
			require.NotNil(t, res.Error)
			assert.Equal(t, fenixerr.TypeWorkspaceEscape, res.Error.ErrorType, "%+v", res.Error)
			assert.Equal(t, workspace.CodeRootNotAllowed, res.Error.Code)
			assert.Equal(t, string(fenixerr.ClassAuthorization), res.Error.Classification)
			assert.Contains(t, res.Error.LastErrorSummary, workspace.BasesSetting)
			assert.Equal(t, "prepare_turn", res.Error.Stage, "refused at the first stage, before hooks or tools")
			assert.Nil(t, findTraceEntry(res.Trace, "execute_tool").Fields, "no tool ran")
		})
	}

	a := assignment("bases-allowed", map[string]any{
		"call_id": "call-notes", "tool_name": "workspace_read", "arguments": map[string]any{"path": "notes.txt"},
	})
	a["workspace_root"] = filepath.Join(elsewhere, "project-link") // resolves inside the base
	res, _ := runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "inside the base")
}
