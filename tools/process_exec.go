package tools

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/procs"
)

func init() { register(processExecTool()) }

// ProcessExecArgs are process_exec's arguments.
type ProcessExecArgs struct {
	CommandLine         string            `json:"command_line" jsonschema:"minLength=1,maxLength=65536,description=Shell command line of a long-running service; runs with sh -c in the workspace"`
	Cwd                 string            `json:"cwd,omitempty" jsonschema:"maxLength=4096,description=Working directory relative to the workspace root (default: the root)"`
	Port                int               `json:"port,omitempty" jsonschema:"minimum=1024,maximum=65535,description=Loopback port the service listens on; it is exposed through the worker's reverse proxy and passed as PORT"`
	Env                 map[string]string `json:"env,omitempty" jsonschema:"description=Extra environment variables for the service"`
	ReadyTimeoutSeconds int               `json:"ready_timeout_seconds,omitempty" jsonschema:"minimum=1,maximum=120,description=With a port: wait up to this long for it to accept connections (default 15)"`
}

// ProcessExecResult is process_exec's raw result.
type ProcessExecResult struct {
	ProcessRunID string    `json:"process_run_id"`
	HostID       string    `json:"host_id"`
	CommandLine  string    `json:"command_line"`
	Cwd          string    `json:"cwd"`
	PID          int       `json:"pid"`
	Port         int       `json:"port,omitempty"`
	Status       string    `json:"status"`
	Ready        bool      `json:"ready"`
	ExitStatus   *int      `json:"exit_status,omitempty"`
	ProxyPath    string    `json:"proxy_path,omitempty"`
	ProxyURL     string    `json:"proxy_url,omitempty"`
	StartedAt    time.Time `json:"started_at"`
	// Output is the start of the service's log, for a quick look at
	// startup errors.
	Output         string `json:"output,omitempty"`
	ReadyTimeoutMS int64  `json:"ready_timeout_ms,omitempty"`
}

// startupOutputBytes of a service's log go into process_exec's result.
const startupOutputBytes = 8 << 10

// earlyExitWindow catches services that fail at once (a typo, a missing
// binary) when there is no port to wait for.
const earlyExitWindow = 300 * time.Millisecond

func processExecTool() Definition {
	return Define(Spec{
		Name:           processExecName,
		Description:    "Start a long-running background service in the workspace. With a port, it is reachable through the worker's reverse proxy at /proxy/<process_run_id>/.",
		RegistryBacked: true,
		NeedsWorkspace: true,
		Timeout:        3 * time.Minute,
		Heartbeat:      30 * time.Second,
	}, startService, projectServiceStart)
}

const processExecName = "process_exec"

func startService(ctx context.Context, env *Env, a ProcessExecArgs) (ProcessExecResult, error) {
	h, err := requireHost(env, processExecName)
	if err != nil {
		return ProcessExecResult{}, err
	}
	cwd, info, err := launchService(env, h, a)
	if err != nil {
		return ProcessExecResult{}, err
	}
	env.reportResource(info.ID)
	res := ProcessExecResult{
		ProcessRunID: info.ID,
		HostID:       h.ID,
		CommandLine:  a.CommandLine,
		Cwd:          cwdLabel(cwd),
		PID:          info.PID,
		Port:         a.Port,
		StartedAt:    info.StartedAt.UTC(),
	}
	stopBeats := keepAlive(env)
	defer stopBeats()
	if res.Ready, res.ReadyTimeoutMS, err = awaitServiceStart(ctx, h, info.ID, a); err != nil {
		return ProcessExecResult{}, err
	}
	if err := describeStartedService(h, &res); err != nil {
		return ProcessExecResult{}, err
	}
	return res, nil
}

// launchService starts the service in the workspace under a new process
// run ID; it returns the working directory as given and the service.
func launchService(env *Env, h *Host, a ProcessExecArgs) (string, procs.ServiceInfo, error) {
	if err := validCommandLine(processExecName, a.CommandLine); err != nil {
		return "", procs.ServiceInfo{}, err
	}
	cwd, dir, err := resolveCwd(env, a.Cwd)
	if err != nil {
		return "", procs.ServiceInfo{}, err
	}
	extra := map[string]string{}
	if a.Port > 0 {
		extra["PORT"] = strconv.Itoa(a.Port)
	}
	for k, v := range a.Env {
		extra[k] = v
	}
	vars, err := h.commandEnv(processExecName, env.Workspace.Dir(), extra)
	if err != nil {
		return "", procs.ServiceInfo{}, err
	}
	conf, err := h.commandConfinement(processExecName)
	if err != nil {
		return "", procs.ServiceInfo{}, err
	}
	id, err := NewResourceID(ResourceProcessRun, h.ID)
	if err != nil {
		return "", procs.ServiceInfo{}, fenixerr.Runtime("minting a process run ID: %v", err)
	}
	info, err := h.services.Start(procs.ServiceSpec{
		ID:             id,
		CommandLine:    a.CommandLine,
		Dir:            dir,
		Env:            vars,
		Port:           a.Port,
		Limits:         h.cfg.Services.Limits,
		User:           h.cfg.CommandUser,
		Confiner:       conf.confiner,
		Workspace:      env.Workspace.Dir(),
		ReadOnly:       conf.readOnly(env.Workspace),
		Prelude:        commandPrelude(env.SessionEnv, extra),
		CallID:         env.CallID,
		ConversationID: env.ConversationID,
		NetworkAsk:     env.AskNetwork,
	})
	switch {
	case errors.Is(err, procs.ErrPortInUse):
		return "", procs.ServiceInfo{}, fenixerr.Validation("process_exec: %v", err).WithTool(processExecName).WithCode("port_in_use")
	case errors.Is(err, procs.ErrLimitReached):
		return "", procs.ServiceInfo{}, fenixerr.New(fenixerr.TypeToolUnavailable, "process_exec: %v", err).WithTool(processExecName).WithCode("too_many_services")
	case err != nil:
		return "", procs.ServiceInfo{}, notStarted(processExecName, a.CommandLine, err)
	}
	return cwd, info, nil
}

// awaitServiceStart waits, with a port, until the port answers (ready)
// or the ready timeout passes, and without one for the early-exit window.
// A call canceled meanwhile stops the service, so it is not left running
// unowned.
func awaitServiceStart(ctx context.Context, h *Host, id string, a ProcessExecArgs) (ready bool, readyTimeoutMS int64, err error) {
	if a.Port > 0 {
		wait := 15 * time.Second
		if a.ReadyTimeoutSeconds > 0 {
			wait = time.Duration(a.ReadyTimeoutSeconds) * time.Second
		}
		readyTimeoutMS = wait.Milliseconds()
		if ready, err = h.services.WaitReady(ctx, id, wait); err != nil {
			return false, 0, fenixerr.Runtime("waiting for process run %s: %v", id, err).WithTool(processExecName)
		}
	} else if _, err := h.services.WaitExit(ctx, id, earlyExitWindow); err != nil {
		_, _ = h.services.Stop(id)
		return false, 0, fenixerr.New(fenixerr.TypeCanceled, "process_exec was canceled; process run %s was stopped", id).WithTool(processExecName).WithCause(err)
	}
	if ctx.Err() != nil {
		_, _ = h.services.Stop(id)
		return false, 0, fenixerr.New(fenixerr.TypeCanceled, "process_exec was canceled; process run %s was stopped", id).WithTool(processExecName).WithCause(ctx.Err())
	}
	return ready, readyTimeoutMS, nil
}

// describeStartedService fills in what the service is now: its status,
// the start of its output and, while it serves its port, the proxy path.
func describeStartedService(h *Host, res *ProcessExecResult) error {
	id := res.ProcessRunID
	info, err := h.services.Info(id)
	if err != nil {
		return fenixerr.Runtime("process run %s vanished: %v", id, err).WithTool(processExecName)
	}
	res.Status = info.Status
	res.ExitStatus = info.ExitStatus
	if data, start, _, err := h.services.Output(id, startupOutputBytes); err == nil {
		res.Output = procs.ValidText(data, start > 0)
	}
	if res.Port > 0 && info.Status == procs.StatusRunning {
		if base := h.ProxyBaseURL(); base != "" {
			res.ProxyPath = procs.ProxyPath(id)
			res.ProxyURL = base + res.ProxyPath
		}
	}
	return nil
}

// keepAlive heartbeats every few seconds until stopped.
func keepAlive(env *Env) (stop func()) {
	if env.Heartbeat == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				env.heartbeat()
			}
		}
	}()
	return func() { close(done) }
}

func projectServiceStart(_ ProcessExecArgs, r ProcessExecResult) Projection {
	var b strings.Builder
	fmt.Fprintf(&b, "Background service started as process run %s.", r.ProcessRunID)
	if r.ProxyPath != "" {
		fmt.Fprintf(&b, " Available at %s.", r.ProxyPath)
	}
	switch {
	case r.Status != procs.StatusRunning && r.ExitStatus != nil:
		fmt.Fprintf(&b, " It already exited with status %d.", *r.ExitStatus)
	case r.Port > 0 && !r.Ready:
		fmt.Fprintf(&b, " Port %d did not accept connections within %s; it may still be starting (check process_list).", r.Port, time.Duration(r.ReadyTimeoutMS)*time.Millisecond)
	}
	if r.Output != "" {
		fmt.Fprintf(&b, "\n\nOutput so far:\n%s", r.Output)
	}
	meta := map[string]any{
		"process_run_id": r.ProcessRunID,
		"host_id":        r.HostID,
		"pid":            r.PID,
		"status":         r.Status,
		"ready":          r.Ready,
	}
	if r.Port > 0 {
		meta["port"] = r.Port
	}
	if r.ProxyPath != "" {
		meta["proxy_path"] = r.ProxyPath
		meta["proxy_url"] = r.ProxyURL
	}
	if r.ExitStatus != nil {
		meta["exit_status"] = *r.ExitStatus
	}
	return Projection{Content: b.String(), Metadata: meta}
}
