package testtools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workspace"
)

func TestSlowLookupRunsWhileHeldAndCountsExecutions(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	registry, err := tools.NewRegistry(SlowLookup())
	if err != nil {
		t.Fatal(err)
	}
	hold := filepath.Join(dir, "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	call := contract.ToolCall{CallID: "c", ToolName: "test_slow_lookup", Arguments: map[string]any{"log": "runs.log", "hold": "hold"}}
	done := make(chan json.RawMessage, 1)
	go func() {
		raw, err := registry.Execute(context.Background(), &tools.Env{Workspace: ws}, call)
		if err != nil {
			t.Error(err)
		}
		done <- raw
	}()
	select {
	case <-done:
		t.Fatal("the lookup returned while the hold file exists")
	case <-time.After(200 * time.Millisecond):
	}
	os.Remove(hold)
	var first SlowLookupResult
	if err := json.Unmarshal(<-done, &first); err != nil || first.Executions != 1 {
		t.Fatalf("first run: %+v, %v", first, err)
	}
	raw, err := registry.Execute(context.Background(), &tools.Env{Workspace: ws}, call)
	var second SlowLookupResult
	if err != nil || json.Unmarshal(raw, &second) != nil || second.Executions != 2 {
		t.Fatalf("second run: %s, %v", raw, err)
	}
}
