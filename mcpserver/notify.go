package mcpserver

// What a client hears while its call runs: the run's reports as progress
// notifications, and at the end the log messages of the tool's source.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/tools"
)

// sendLogs passes the log messages the tool's source sent while it ran
// (tools.MetaLogs) to the client, before the result, at the level the
// client set (none until it sets one, as the SDK has it).
func (c *call) sendLogs(ctx context.Context, res contract.Result) {
	if res.Output == nil || res.Output.Data[tools.MetaLogs] == nil {
		return
	}
	raw, err := json.Marshal(res.Output.Data[tools.MetaLogs])
	var logs []tools.LogMessage
	if err == nil {
		err = json.Unmarshal(raw, &logs)
	}
	if err != nil {
		c.g.cfg.Logger.Warn("mcp gateway: a run's log messages do not decode", "workflow_id", c.workflowID, "error", err)
		return
	}
	for _, l := range logs {
		var data any
		_ = json.Unmarshal(l.Data, &data)
		//lint:ignore SA1019 SEP-2577 deprecates MCP logging, which clients still read during its deprecation window.
		if err := c.req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(l.Level), Logger: l.Logger, Data: data}); err != nil {
			c.g.cfg.Logger.Debug("mcp gateway: log message not sent", "error", err)
			return
		}
	}
}

// sendReports sends the reports not sent yet as progress notifications.
func (c *call) sendReports(ctx context.Context, reports []contract.Report) {
	for _, r := range reports {
		if r.Sequence <= c.sentReport {
			continue
		}
		c.sentReport = r.Sequence
		c.progress(ctx, describeReport(r))
	}
}

func (c *call) progress(ctx context.Context, msg string) {
	if c.token == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.progressed++
	c.lastProgress = time.Now()
	if err := c.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: c.token, Progress: c.progressed, Message: msg}); err != nil {
		c.g.cfg.Logger.Debug("mcp gateway: progress not sent", "error", err)
	}
}

// quietFor is how long no progress notification was sent.
func (c *call) quietFor() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Since(c.lastProgress)
}

// describeReport is one line per report: kind, phase, tool and what it says.
func describeReport(r contract.Report) string {
	parts := []string{r.Kind}
	if r.Phase != "" {
		parts = append(parts, r.Phase)
	}
	if t := r.ToolInvocation; t != nil {
		parts = append(parts, fmt.Sprintf("%s (%s)", t.ToolName, t.Status))
	}
	if o := r.OutputChunk; o != nil {
		parts = append(parts, fmt.Sprintf("%s: %s", o.Stream, audit.Preview(o.Text, 200)))
	}
	if r.Error != nil {
		parts = append(parts, audit.Preview(r.Error.LastErrorSummary, 200))
	}
	return strings.Join(parts, " ")
}
