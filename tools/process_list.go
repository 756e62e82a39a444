package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/procs"
)

func init() { register(processListTool()) }

// ProcessListArgs are process_list's arguments.
type ProcessListArgs struct {
	ProcessRunID  string `json:"process_run_id,omitempty" jsonschema:"maxLength=128,pattern=^proc_[a-z0-9-]+_[0-9a-f]{16}$,description=Describe only this process run (and route the call to its host)"`
	IncludeOutput bool   `json:"include_output,omitempty" jsonschema:"description=Include the tail of each service's output"`
	OutputBytes   int    `json:"output_bytes,omitempty" jsonschema:"minimum=1,maximum=65536,description=Output tail per service with include_output (default 4096)"`
}

// ProcessView is one service in process_list's result.
type ProcessView struct {
	procs.ServiceInfo
	ProxyPath string `json:"proxy_path,omitempty"`
	ProxyURL  string `json:"proxy_url,omitempty"`
	Output    string `json:"output,omitempty"`
}

// ProcessListResult is process_list's raw result.
type ProcessListResult struct {
	HostID    string        `json:"host_id"`
	Processes []ProcessView `json:"processes"`
}

func processListTool() Definition {
	return Define(Spec{
		Name:           "process_list",
		Description:    "List the background services started with process_exec on this worker host: status, port, proxy path and optionally recent output.",
		ReadOnly:       true,
		RegistryBacked: true,
		Idempotent:     true,
		Timeout:        30 * time.Second,
		Owner:          stringArg("process_run_id"),
	}, listServices, projectServiceList)
}

func listServices(_ context.Context, env *Env, a ProcessListArgs) (ProcessListResult, error) {
	const tool = "process_list"
	h, err := requireHost(env, tool)
	if err != nil {
		return ProcessListResult{}, err
	}
	var infos []procs.ServiceInfo
	if a.ProcessRunID != "" {
		if err := h.requireOwner(tool, a.ProcessRunID); err != nil {
			return ProcessListResult{}, err
		}
		info, err := conversationService(env, h, tool, a.ProcessRunID)
		if err != nil {
			return ProcessListResult{}, err
		}
		infos = []procs.ServiceInfo{info}
	} else {
		for _, info := range h.services.List() {
			if sameConversation(env, info.ConversationID) {
				infos = append(infos, info)
			}
		}
	}
	tailBytes := a.OutputBytes
	if tailBytes == 0 {
		tailBytes = 4 << 10
	}
	// All services share one output budget so the result stays small.
	if len(infos) > 0 {
		tailBytes = min(tailBytes, resultTextBudget/6/len(infos))
	}
	res := ProcessListResult{HostID: h.ID, Processes: make([]ProcessView, 0, len(infos))}
	for _, info := range infos {
		v := ProcessView{ServiceInfo: info}
		if info.Port > 0 && info.Status == procs.StatusRunning && h.ProxyBaseURL() != "" {
			v.ProxyPath = procs.ProxyPath(info.ID)
			v.ProxyURL = h.ProxyBaseURL() + v.ProxyPath
		}
		if a.IncludeOutput {
			if data, start, _, err := h.services.Output(info.ID, tailBytes); err == nil {
				v.Output = procs.ValidText(data, start > 0)
			}
		}
		res.Processes = append(res.Processes, v)
	}
	return res, nil
}

// sameConversation says whether the calling conversation may see a
// service or command run started by conversation owner: its own
// (subagents share their parent's conversation), or any when either side
// has none (a call without a conversation, a record from before
// conversations were kept). A process's command line and output are its
// conversation's, and another conversation's agent must not read or stop
// them.
func sameConversation(env *Env, owner string) bool {
	return env.ConversationID == "" || owner == "" || env.ConversationID == owner
}

// conversationService looks up a service the calling conversation may
// see; another conversation's is refused as if it were not there, with a
// code that says why.
func conversationService(env *Env, h *Host, tool, id string) (procs.ServiceInfo, error) {
	info, err := h.services.Info(id)
	if err != nil {
		return procs.ServiceInfo{}, serviceLookupError(tool, h, id, err)
	}
	if !sameConversation(env, info.ConversationID) {
		return procs.ServiceInfo{}, fenixerr.Validation("process run %s on host %s was started by another conversation; %s only acts on this conversation's services", id, h.ID, tool).WithTool(tool).WithCode("other_conversation")
	}
	return info, nil
}

func serviceLookupError(tool string, h *Host, id string, err error) error {
	if errors.Is(err, procs.ErrNotFound) {
		return fenixerr.Validation("process run %s is not known on host %s (it may predate a worker restart)", id, h.ID).WithTool(tool).WithCode("not_found")
	}
	return fenixerr.Runtime("%s: %v", tool, err).WithTool(tool)
}

func projectServiceList(_ ProcessListArgs, r ProcessListResult) Projection {
	var b strings.Builder
	if len(r.Processes) == 0 {
		fmt.Fprintf(&b, "No background services on host %s.", r.HostID)
	} else {
		fmt.Fprintf(&b, "Background services on host %s:", r.HostID)
	}
	ids := make([]string, 0, len(r.Processes))
	for i, p := range r.Processes {
		ids = append(ids, p.ID)
		fmt.Fprintf(&b, "\n%d. %s %s", i+1, p.ID, describeService(p.ServiceInfo))
		if p.ProxyPath != "" {
			fmt.Fprintf(&b, ", available at %s", p.ProxyPath)
		}
		fmt.Fprintf(&b, ": %s", p.CommandLine)
		if p.Output != "" {
			fmt.Fprintf(&b, "\n   output:\n%s", indent(p.Output, "   "))
		}
	}
	return Projection{
		Content:  b.String(),
		Metadata: map[string]any{"host_id": r.HostID, "process_run_ids": ids, "count": len(r.Processes)},
	}
}

func describeService(s procs.ServiceInfo) string {
	var b strings.Builder
	b.WriteString(s.Status)
	switch {
	case s.Status == procs.StatusRunning && s.Port > 0:
		fmt.Fprintf(&b, " (pid %d, port %d)", s.PID, s.Port)
	case s.Status == procs.StatusRunning:
		fmt.Fprintf(&b, " (pid %d)", s.PID)
	case s.ExitStatus != nil:
		fmt.Fprintf(&b, " (exit status %d)", *s.ExitStatus)
	case s.Reason == procs.ReasonWorkerLost:
		b.WriteString(" (the worker running it was lost; exit status unknown)")
	}
	return b.String()
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}
