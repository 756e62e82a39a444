package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contextstore"
)

// The gateway reads the store the worker writes attachments to: the one
// named (-context-store, -data-dir, which default to the workers'
// variables), else a worker's default data directory on this host when it has
// one; a named store that does not open stops the start, and no store at
// all leaves attachments named, not sent.
func TestTheGatewayFindsTheWorkersContextStore(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	if store, err := gatewayContexts(ctx, "", ""); err != nil || store != nil {
		t.Fatalf("no worker on this host: store %v, err %v; want none", store, err)
	}
	if _, err := os.Stat(filepath.Join(state, "fenix")); !os.IsNotExist(err) {
		t.Fatalf("looking for the default store created %s (%v)", filepath.Join(state, "fenix"), err)
	}

	written, err := contextstore.NewFS(filepath.Join(state, "fenix", "contexts"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := written.Put(ctx, []byte("png"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := gatewayContexts(ctx, "", "")
	if err != nil || store == nil {
		t.Fatalf("a worker's default data directory: store %v, err %v", store, err)
	}
	if data, err := store.Get(ctx, ref); err != nil || string(data) != "png" {
		t.Fatalf("read %q, %v from the default store", data, err)
	}

	dataDir := t.TempDir()
	if store, err = gatewayContexts(ctx, "", dataDir); err != nil || store == nil {
		t.Fatalf("-data-dir: store %v, err %v", store, err)
	}
	if _, err := store.Get(ctx, ref); err == nil {
		t.Fatal("-data-dir names another store, yet the default one was read")
	}

	if _, err := gatewayContexts(ctx, "relative/dir", ""); err == nil || !strings.Contains(err.Error(), contextstore.Setting) {
		t.Fatalf("a store that does not open: err = %v, want it named", err)
	}
}
