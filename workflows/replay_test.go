package workflows_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/llm/scripted"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	fenixworker "github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

var (
	record   = flag.Bool("record", false, "record replay histories that are missing from testdata/ (existing ones are the compatibility corpus and are kept)")
	rerecord = flag.Bool("rerecord", false, "overwrite every replay history in testdata/ (only when a change is meant to break old histories)")
)

// TestReplayHistories replays every recorded history against the current
// workflow code: a change that alters the command sequence of an existing
// shape without workflow.GetVersion fails here.
func TestReplayHistories(t *testing.T) {
	if *record || *rerecord {
		recordHistories(t, *rerecord)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no replay histories in testdata/; run `go test ./workflows -run TestReplayHistories -record`")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			require.NoError(t, newReplayer(t).ReplayWorkflowHistoryFromJSONFile(quietReplayLogger(), file))
		})
	}
}

// TestIncompatibleHistoryFailsReplay guards the guard: a history whose
// commands no longer match the code must be rejected.
func TestIncompatibleHistoryFailsReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "incompatible", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			err := newReplayer(t).ReplayWorkflowHistoryFromJSONFile(quietReplayLogger(), file)
			require.Error(t, err)
			require.Contains(t, err.Error(), "nondeterministic")
		})
	}
}

func newReplayer(t testing.TB) worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	fenixworker.Register(r)
	return r
}

func quietReplayLogger() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
}

func waitForPhase(ctx context.Context, c client.Client, run client.WorkflowRun, phase string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if v, err := c.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.QueryReports); err == nil {
			var reports []contract.Report
			if v.Get(&reports) == nil {
				for _, r := range reports {
					if r.Phase == phase {
						return nil
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("workflow %s never reported phase %s", run.GetID(), phase)
}

// recordHistories runs the scenarios on a fresh dev server and writes their
// histories to testdata/ (with the deliberately incompatible one derived
// from the calculator history).
func recordHistories(t *testing.T, overwrite bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cli, err := devserver.CLIPath(ctx, true, os.Stderr)
	require.NoError(t, err)
	srv, err := devserver.Start(ctx, devserver.Options{CLIPath: cli})
	require.NoError(t, err)
	defer srv.Stop()

	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("# Fenix\nDurable agents.\n"), 0o644))
	writeBigFile(t, ws)
	registry, err := testtools.WithBuiltins(testtools.Sleep(), testtools.Picture())
	require.NoError(t, err)
	queue := "fenix-record"
	w, err := fenixworker.New(srv.Client(), fenixworker.Config{
		TaskQueue: queue, DataDir: t.TempDir(), DefaultWorkspaceRoot: ws, HostID: "recorder", Tools: registry,
		SkillsDir: filepath.Join("..", "examples", "skills"), Hooks: []hooks.AgentHook{testtools.PolicyHook{}},
		HookSources: []string{permissionsProject(t, sessionProject(t))},
		Model:       &llm.Router{Scripted: scriptedProvider(t)},
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	defer w.Stop()
	builtinsQueue := "fenix-record-builtins"
	bw, err := fenixworker.New(srv.Client(), fenixworker.Config{
		TaskQueue: builtinsQueue, DataDir: t.TempDir(), DefaultWorkspaceRoot: ws, HostID: "recorder-builtins", Tools: registry,
		SkillsDir: filepath.Join("..", "examples", "skills"), Model: &llm.Router{Scripted: scriptedProvider(t)},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	require.NoError(t, bw.Start())
	defer bw.Stop()

	builtins := builtinScenarios()
	for i, sc := range append(append(append(builtins, scenarios()...), rewindScenarios()...), sessionScenarios()...) {
		path := filepath.Join("testdata", sc.file)
		if _, err := os.Stat(path); err == nil && !overwrite {
			continue
		}
		q := queue
		if i < len(builtins) {
			q = builtinsQueue
		}
		run, err := sc.run(ctx, srv.Client(), q)
		require.NoError(t, err, sc.file)
		// Get follows continue-as-new; the scenario's history is its first run.
		first := srv.Client().GetWorkflow(ctx, run.GetID(), run.GetRunID())
		var ignored any
		require.NoError(t, run.Get(ctx, &ignored), sc.file)
		hist := fetchHistory(t, ctx, srv.Client(), first)
		writeHistory(t, path, hist)
		if last := run.GetRunID(); last != first.GetRunID() {
			continued := strings.TrimSuffix(path, ".json") + "_last_run.json"
			writeHistory(t, continued, fetchHistory(t, ctx, srv.Client(), srv.Client().GetWorkflow(ctx, run.GetID(), last)))
		}
		if sc.file == "execute_assignment_calculator.json" {
			writeHistory(t, filepath.Join("testdata", "incompatible", "review_stage_renamed.json"), renameFirstActivity(t, hist, "ReviewToolCall", "ApproveToolCall"))
		}
		t.Logf("recorded %s: %d events", sc.file, len(hist.Events))
	}
}

func scriptedProvider(t *testing.T) *scripted.Provider {
	p, err := scripted.Load(filepath.Join("testdata", "scripts", "agent.json"))
	require.NoError(t, err)
	return p
}

func fetchHistory(t *testing.T, ctx context.Context, c client.Client, run client.WorkflowRun) *historypb.History {
	hist := &historypb.History{}
	iter := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		hist.Events = append(hist.Events, e)
	}
	return hist
}

func writeHistory(t *testing.T, path string, hist *historypb.History) {
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
}

// renameFirstActivity changes the type of the first scheduled activity
// named from: the code will schedule `from` where history says `to`.
func renameFirstActivity(t *testing.T, hist *historypb.History, from, to string) *historypb.History {
	b, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(hist)
	require.NoError(t, err)
	mutated := strings.Replace(string(b), `"activityType":{"name":"`+from+`"}`, `"activityType":{"name":"`+to+`"}`, 1)
	require.NotEqual(t, string(b), mutated, "activity %s not found in history", from)
	out := &historypb.History{}
	require.NoError(t, temporalproto.CustomJSONUnmarshalOptions{}.Unmarshal([]byte(mutated), out))
	return out
}

// sessionProject copies the session-project fixture (Claude Code hooks
// that log their input) to a temporary checkout.
// permissionsProject adds a Read deny rule to project, so the recorder's
// PreToolUse judges workspace paths (reached_path_workspace_read).
func permissionsProject(t *testing.T, project string) string {
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"), []byte(`{"permissions": {"deny": ["Read(./.env)"]}}`), 0o644))
	return project
}

func sessionProject(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "session-project")
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("..", "hooks", "claudecode", "testdata", "session-project"))))
	return dir
}
