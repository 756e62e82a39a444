package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/mcpserver"
	"github.com/fenixrt/fenix/tools"
)

// The conformance suite's tool scenarios call fixture tools by name. The
// test worker serves them as ordinary Fenix tools, so every call still
// goes through ExecuteAssignment and its pipeline.
type noArgs struct{}

type textResult struct {
	Text string `json:"text"`
}

type loggedResult struct {
	Logs []tools.LogMessage `json:"logs"`
}

func conformanceTools() []tools.Definition {
	text := func(name, desc, out string, delay time.Duration) tools.Definition {
		return tools.Define(tools.Spec{Name: name, Description: desc, Idempotent: true},
			func(ctx context.Context, _ *tools.Env, _ noArgs) (textResult, error) {
				select {
				case <-ctx.Done():
					return textResult{}, ctx.Err()
				case <-time.After(delay):
				}
				return textResult{Text: out}, nil
			}, func(_ noArgs, r textResult) tools.Projection { return tools.Projection{Content: r.Text} })
	}
	failing := tools.Define(tools.Spec{Name: "test_error_handling", Description: "Always fails (conformance fixture)."},
		func(context.Context, *tools.Env, noArgs) (textResult, error) {
			return textResult{}, errors.New("This tool intentionally returns an error for testing")
		}, func(_ noArgs, r textResult) tools.Projection { return tools.Projection{Content: r.Text} })
	// Its log messages go in its result's metadata, where an MCP tool's
	// server's land (tools.MetaLogs).
	logging := tools.Define(tools.Spec{Name: "test_tool_with_logging", Description: "Logs three messages as it runs (conformance fixture).", Idempotent: true},
		func(context.Context, *tools.Env, noArgs) (loggedResult, error) {
			var out loggedResult
			for _, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				data, _ := json.Marshal(msg)
				out.Logs = append(out.Logs, tools.LogMessage{Level: "info", Logger: "conformance", Data: data})
			}
			return out, nil
		}, func(_ noArgs, r loggedResult) tools.Projection {
			return tools.Projection{Content: "Logged three messages.", Metadata: map[string]any{tools.MetaLogs: r.Logs}}
		})
	return []tools.Definition{
		logging,
		text("test_simple_text", "Returns simple text (conformance fixture).", "This is a simple text response for testing.", 0),
		text("test_tool_with_progress", "Runs briefly while its reports arrive as progress (conformance fixture).", "Progress tool completed.", 100*time.Millisecond),
		failing,
	}
}

// Scenarios of conformance 0.1.13 that apply to Fenix's gateway: its
// tools, and the resources and prompts of the MCP servers behind its
// workers, their completions and subscriptions. The others need what it
// does not offer: sampling, SSE polling.
var applicableScenarios = []string{
	"server-initialize", "logging-set-level", "ping", "tools-list",
	"tools-call-simple-text", "tools-call-error", "tools-call-with-progress",
	"tools-call-image", "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging",
	"tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums",
	"json-schema-2020-12", "server-sse-multiple-streams", "dns-rebinding-protection",
	"resources-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
	"prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
	"completion-complete", "resources-subscribe", "resources-unsubscribe",
}

// TestConformanceSuite runs `conformance server --url` against the
// Streamable HTTP endpoint and requires every applicable scenario to pass.
func TestConformanceSuite(t *testing.T) {
	needNPM(t)
	// The resource and prompt scenarios read an MCP server's resources and
	// prompts through the worker's tools for them: a server of our own
	// offers the ones they name.
	upstream := filepath.Join(t.TempDir(), "upstreamserver")
	build := exec.Command("go", "build", "-o", upstream, "./upstreamserver")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	mcpConfig := filepath.Join(t.TempDir(), ".mcp.json")
	require.NoError(t, os.WriteFile(mcpConfig, []byte(`{"mcpServers": {"conformance": {"command": "`+upstream+`"}}}`), 0o644))
	w := startWorkerWith(t, func(c *worker.Config) { c.MCPConfig = mcpConfig }, append(append(conformanceTools(), conformanceMediaTools(t)...), conformanceElicitTools()...)...)
	ready, cancelReady := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelReady()
	require.NoError(t, w.MCP().WaitReady(ready))
	store := w.contexts(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Contexts: store}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(npmDir, "node_modules", ".bin", "conformance"), "server", "--url", url, "--suite", "all", "-o", t.TempDir())
	cmd.Dir = npmDir
	raw, err := cmd.CombinedOutput()
	summary := regexp.MustCompile(`(?m)^[✓✗] (\S+): (\d+) passed, (\d+) failed`).FindAllStringSubmatch(string(raw), -1)
	require.NotEmpty(t, summary, "no summary from the conformance suite (%v):\n%s", err, raw)
	results := map[string]bool{}
	passed := 0
	for _, m := range summary {
		// A scenario that checked nothing (server-sse-polling only warns
		// without its test_reconnection fixture) has not passed.
		succeeded, _ := strconv.Atoi(m[2])
		failed, _ := strconv.Atoi(m[3])
		results[m[1]] = succeeded > 0 && failed == 0
		if results[m[1]] {
			passed++
		}
		t.Logf("%-32s %s passed, %s failed", m[1], m[2], m[3])
	}
	t.Logf("conformance: %d of %d scenarios pass", passed, len(summary))
	for _, s := range applicableScenarios {
		ok, ran := results[s]
		assert.True(t, ran, "scenario %s did not run", s)
		assert.True(t, ok, "scenario %s failed; output:\n%s", s, raw)
	}
}
