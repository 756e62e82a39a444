package testtools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenixrt/fenix/tools"
)

// SlowLookupArgs are test_slow_lookup's arguments: files in the workspace.
type SlowLookupArgs struct {
	// Log gets one line per execution, so a test counts executions.
	Log string `json:"log" jsonschema:"minLength=1"`
	// Hold, while it exists, keeps the lookup running.
	Hold string `json:"hold" jsonschema:"minLength=1"`
}

// SlowLookupResult is test_slow_lookup's result.
type SlowLookupResult struct {
	Executions int `json:"executions"`
}

// SlowLookup is a Local (idempotent, side-effect free as far as the agent
// can tell) tool that runs as long as a hold file exists: fault tests kill
// the worker while it runs as a local activity and count how often it ran.
func SlowLookup() tools.Definition {
	return tools.Define(tools.Spec{Name: "test_slow_lookup", Idempotent: true, Local: true, NeedsWorkspace: true, Timeout: 2 * time.Minute},
		func(ctx context.Context, env *tools.Env, a SlowLookupArgs) (SlowLookupResult, error) {
			// Test files sit at the workspace's top level.
			log := filepath.Join(env.Workspace.Dir(), filepath.Base(a.Log))
			hold := filepath.Join(env.Workspace.Dir(), filepath.Base(a.Hold))
			executions, err := appendLine(log, "lookup")
			if err != nil {
				return SlowLookupResult{}, err
			}
			for {
				if _, err := os.Stat(hold); errors.Is(err, os.ErrNotExist) {
					return SlowLookupResult{Executions: executions}, nil
				}
				select {
				case <-ctx.Done():
					return SlowLookupResult{}, ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
		}, func(_ SlowLookupArgs, r SlowLookupResult) tools.Projection {
			return tools.Projection{Content: fmt.Sprintf("Looked up (execution %d).", r.Executions)}
		})
}

// appendLine appends a line and returns how many lines the file has.
func appendLine(path, line string) (int, error) {
	f, err := os.OpenFile(filepath.Clean(path), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, b := range data {
		if b == '\n' {
			n++
		}
	}
	return n, nil
}
