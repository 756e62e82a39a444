package tools

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/procs"
)

func helperCommand(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return "exec " + shellQuote(exe)
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestProcessLifecycleWithProxy(t *testing.T) {
	r := newRig(t)
	port := freePort(t)
	p, raw := r.mustCall(t, "process_exec", map[string]any{
		"command_line": helperCommand(t),
		"port":         port,
		"env":          map[string]any{helperEnv: "http"},
	})
	res := decode[ProcessExecResult](t, raw)
	wantStart := "Background service started as process run " + res.ProcessRunID + ". Available at /proxy/" + res.ProcessRunID + "/."
	if !strings.HasPrefix(p.Content, wantStart) {
		t.Fatalf("content = %q, want it to start with %q", p.Content, wantStart)
	}
	if !res.Ready || res.Status != procs.StatusRunning || p.Metadata["proxy_path"] != "/proxy/"+res.ProcessRunID+"/" {
		t.Fatalf("result = %+v, metadata %v", res, p.Metadata)
	}
	if owner, ok := HostOfResource(res.ProcessRunID); !ok || owner != "test-host" {
		t.Fatalf("HostOfResource(%q) = %q, %v", res.ProcessRunID, owner, ok)
	}

	t.Run("proxy forwards path and query", func(t *testing.T) {
		code, body := httpGet(t, res.ProxyURL+"api/items?x=1")
		want := "helper says hi: path=/api/items query=x=1 prefix=/proxy/" + res.ProcessRunID
		if code != http.StatusOK || body != want {
			t.Fatalf("GET = %d %q, want 200 %q", code, body, want)
		}
	})
	t.Run("proxy redirects the bare prefix", func(t *testing.T) {
		code, body := httpGet(t, strings.TrimSuffix(res.ProxyURL, "/"))
		if code != http.StatusOK || !strings.Contains(body, "path=/ ") {
			t.Fatalf("GET = %d %q", code, body)
		}
	})
	t.Run("unknown process is a 404", func(t *testing.T) {
		code, _ := httpGet(t, r.host.ProxyBaseURL()+"/proxy/proc_test-host_0000000000000000/")
		if code != http.StatusNotFound {
			t.Fatalf("status = %d, want 404", code)
		}
	})
	t.Run("list", func(t *testing.T) {
		p, _ := r.mustCall(t, "process_list", map[string]any{})
		want := "Background services on host test-host:\n1. " + res.ProcessRunID + " running (pid " + itoa(res.PID) + ", port " + itoa(port) + "), available at /proxy/" + res.ProcessRunID + "/: " + helperCommand(t)
		if p.Content != want {
			t.Fatalf("content =\n%q\nwant\n%q", p.Content, want)
		}
		p, _ = r.mustCall(t, "process_list", map[string]any{"process_run_id": res.ProcessRunID, "include_output": true})
		if !strings.Contains(p.Content, "helper listening on "+itoa(port)) {
			t.Fatalf("output missing from %q", p.Content)
		}
	})
	t.Run("stop kills the group and closes the route", func(t *testing.T) {
		p, raw := r.mustCall(t, "process_stop", map[string]any{"process_run_id": res.ProcessRunID})
		stopped := decode[ProcessStopResult](t, raw)
		if !strings.HasPrefix(p.Content, "Stopped process run "+res.ProcessRunID+" (exit status 143).") || stopped.Status != procs.StatusStopped {
			t.Fatalf("content = %q, status %s", p.Content, stopped.Status)
		}
		if n := procs.LiveGroupSize(res.PID); n != 0 {
			t.Fatalf("%d processes left in the group", n)
		}
		if code, _ := httpGet(t, res.ProxyURL); code != http.StatusBadGateway {
			t.Fatalf("proxy status after stop = %d, want 502", code)
		}
		p, _ = r.mustCall(t, "process_stop", map[string]any{"process_run_id": res.ProcessRunID})
		if !strings.HasPrefix(p.Content, "Process run "+res.ProcessRunID+" had already ended (stopped, exit status 143).") {
			t.Fatalf("second stop = %q", p.Content)
		}
	})
}

func TestProcessExecProjections(t *testing.T) {
	r := newRig(t)
	tests := []struct {
		name string
		args map[string]any
		want func(id string) string
	}{
		{"no port", map[string]any{"command_line": "sleep 30"}, func(id string) string {
			return "Background service started as process run " + id + "."
		}},
		{"exits at once", map[string]any{"command_line": "echo boom; exit 3"}, func(id string) string {
			return "Background service started as process run " + id + ". It already exited with status 3.\n\nOutput so far:\nboom\n"
		}},
		{"port never opens", map[string]any{"command_line": "sleep 30", "port": freePort(t), "ready_timeout_seconds": 1}, func(id string) string {
			return "Background service started as process run " + id + ". Available at /proxy/" + id + "/. Port"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, raw := r.mustCall(t, "process_exec", tt.args)
			id := decode[ProcessExecResult](t, raw).ProcessRunID
			if want := tt.want(id); !strings.HasPrefix(p.Content, want) {
				t.Fatalf("content = %q, want prefix %q", p.Content, want)
			}
		})
	}
	t.Run("Close stops every service", func(t *testing.T) {
		var pids []int
		for _, info := range r.host.ProcessRuns() {
			if info.Status == procs.StatusRunning {
				pids = append(pids, info.PID)
			}
		}
		if len(pids) != 2 {
			t.Fatalf("running services = %d, want 2", len(pids))
		}
		r.host.Close()
		for _, pid := range pids {
			if n := procs.LiveGroupSize(pid); n != 0 {
				t.Fatalf("group %d has %d processes after Close", pid, n)
			}
		}
		for _, info := range r.host.ProcessRuns() {
			if info.Status == procs.StatusRunning {
				t.Fatalf("%s still running after Close", info.ID)
			}
		}
	})
}

func TestProcessExecRefusesATakenPort(t *testing.T) {
	r := newRig(t)
	port := freePort(t)
	_, raw := r.mustCall(t, "process_exec", map[string]any{"command_line": helperCommand(t), "port": port, "env": map[string]any{helperEnv: "http"}})
	if !decode[ProcessExecResult](t, raw).Ready {
		t.Fatal("helper did not become ready")
	}
	_, _, err := r.call(t, "process_exec", map[string]any{"command_line": "sleep 1", "port": port})
	errorIs(t, err, fenixerr.ErrValidation, "port_in_use")
}

func TestProcessToolsRouting(t *testing.T) {
	r := newRig(t)
	for _, tool := range []string{"process_stop", "process_list"} {
		_, _, err := r.call(t, tool, map[string]any{"process_run_id": "proc_elsewhere_0123456789abcdef"})
		errorIs(t, err, fenixerr.ErrToolUnavailable, "wrong_host")
	}
	_, _, err := r.call(t, "process_stop", map[string]any{"process_run_id": "proc_test-host_0123456789abcdef"})
	errorIs(t, err, fenixerr.ErrValidation, "not_found")
	p, _ := r.mustCall(t, "process_list", map[string]any{})
	if p.Content != "No background services on host test-host." {
		t.Fatalf("content = %q", p.Content)
	}
}

// One host runs every conversation's services: another conversation's
// agent must not list their command lines and output, nor stop them.
func TestProcessToolsKeepToTheirConversation(t *testing.T) {
	r := newRig(t)
	_, raw := r.mustCall(t, "process_exec", map[string]any{"command_line": "echo token=hunter3; sleep 30"})
	mine := decode[ProcessExecResult](t, raw)

	r.env.ConversationID = "conv-other"
	p, raw := r.mustCall(t, "process_list", map[string]any{"include_output": true})
	if strings.Contains(string(raw), mine.ProcessRunID) || strings.Contains(p.Content, "hunter3") {
		t.Fatalf("another conversation lists the service: %s", p.Content)
	}
	for _, tool := range []string{"process_list", "process_stop"} {
		_, _, err := r.call(t, tool, map[string]any{"process_run_id": mine.ProcessRunID})
		errorIs(t, err, fenixerr.ErrValidation, "other_conversation")
	}
	if info, err := r.host.services.Info(mine.ProcessRunID); err != nil || info.Status != procs.StatusRunning {
		t.Fatalf("the service after another conversation's process_stop: %+v, %v", info, err)
	}

	r.env.ConversationID = "conv-1"
	p, _ = r.mustCall(t, "process_list", map[string]any{})
	if !strings.Contains(p.Content, mine.ProcessRunID) {
		t.Fatalf("its own conversation does not list it: %s", p.Content)
	}
	if _, _, err := r.call(t, "process_stop", map[string]any{"process_run_id": mine.ProcessRunID}); err != nil {
		t.Fatal(err)
	}
}
