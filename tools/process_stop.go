package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fenixrt/fenix/tools/procs"
)

func init() { register(processStopTool()) }

// ProcessStopArgs are process_stop's arguments.
type ProcessStopArgs struct {
	ProcessRunID string `json:"process_run_id" jsonschema:"minLength=1,maxLength=128,pattern=^proc_[a-z0-9-]+_[0-9a-f]{16}$,description=The process_run_id process_exec returned"`
}

// ProcessStopResult is process_stop's raw result.
type ProcessStopResult struct {
	procs.ServiceInfo
	// WasRunning is false when the service had already ended.
	WasRunning bool   `json:"was_running"`
	Output     string `json:"output,omitempty"`
}

func processStopTool() Definition {
	return Define(Spec{
		Name:           "process_stop",
		Description:    "Stop a background service started with process_exec: its whole process group gets SIGTERM, then SIGKILL after a short grace.",
		RegistryBacked: true,
		Idempotent:     true,
		Timeout:        30 * time.Second,
		Owner:          stringArg("process_run_id"),
	}, stopService, projectServiceStop)
}

func stopService(_ context.Context, env *Env, a ProcessStopArgs) (ProcessStopResult, error) {
	const tool = "process_stop"
	h, err := requireHost(env, tool)
	if err != nil {
		return ProcessStopResult{}, err
	}
	if err := h.requireOwner(tool, a.ProcessRunID); err != nil {
		return ProcessStopResult{}, err
	}
	before, err := conversationService(env, h, tool, a.ProcessRunID)
	if err != nil {
		return ProcessStopResult{}, err
	}
	after, err := h.services.Stop(a.ProcessRunID)
	if err != nil {
		return ProcessStopResult{}, serviceLookupError(tool, h, a.ProcessRunID, err)
	}
	res := ProcessStopResult{ServiceInfo: after, WasRunning: before.Status == procs.StatusRunning}
	if data, start, _, err := h.services.Output(a.ProcessRunID, 4<<10); err == nil {
		res.Output = procs.ValidText(data, start > 0)
	}
	return res, nil
}

func projectServiceStop(_ ProcessStopArgs, r ProcessStopResult) Projection {
	var b strings.Builder
	code := "unknown"
	if r.ExitStatus != nil {
		code = fmt.Sprint(*r.ExitStatus)
	}
	if r.WasRunning {
		fmt.Fprintf(&b, "Stopped process run %s (exit status %s).", r.ID, code)
	} else {
		fmt.Fprintf(&b, "Process run %s had already ended (%s, exit status %s).", r.ID, r.Status, code)
	}
	if r.Output != "" {
		fmt.Fprintf(&b, "\n\nLast output:\n%s", r.Output)
	}
	meta := map[string]any{"process_run_id": r.ID, "status": r.Status, "was_running": r.WasRunning}
	if r.ExitStatus != nil {
		meta["exit_status"] = *r.ExitStatus
	}
	return Projection{Content: b.String(), Metadata: meta}
}
