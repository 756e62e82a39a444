package procs

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"
)

func TestRecordStoreLoad(t *testing.T) {
	store, err := openRecordStore[CommandRun](t.TempDir(), "command run", "command_run_id")
	if err != nil {
		t.Fatal(err)
	}
	const id = "cmd_host-a_0123456789abcdef"
	const other = "cmd_host-a_fedcba9876543210"
	if err := store.save(CommandRun{ID: id, CommandLine: "true", Status: RunExited}); err != nil {
		t.Fatal(err)
	}
	if err := store.save(CommandRun{ID: "not an id"}); err == nil {
		t.Error("saving a record with a malformed ID succeeded")
	}
	got, err := store.load(id)
	if err != nil || got.ID != id || got.CommandLine != "true" || got.Status != RunExited {
		t.Errorf("load(%s) = %+v, %v; want the saved record", id, got, err)
	}
	if _, err := store.load(other); !errors.Is(err, ErrNotFound) {
		t.Errorf("load of a missing record: err = %v, want ErrNotFound", err)
	}
	for _, tc := range []struct{ name, content string }{
		{"not JSON", "{"},
		{"names another run", `{"command_run_id":"` + id + `"}`},
	} {
		if err := os.WriteFile(store.path(other, ".json"), []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := store.load(other); !errors.Is(err, errCorruptRecord) {
			t.Errorf("%s: err = %v, want errCorruptRecord", tc.name, err)
		}
	}
	// recover skips the corrupt record and returns the good one unchanged.
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	recs := store.recover(log, func(CommandRun) (CommandRun, error) {
		t.Error("recover closed a record that was not running")
		return CommandRun{}, nil
	})
	if len(recs) != 1 || recs[0].ID != id {
		t.Errorf("recover = %+v, want only %s", recs, id)
	}
	store.remove(id, ".stdout")
	if _, err := store.load(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("load after remove: err = %v, want ErrNotFound", err)
	}
}
