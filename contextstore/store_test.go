package contextstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

func TestPackInlinesSmallAndStoresLarge(t *testing.T) {
	ctx := context.Background()
	store, err := NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	small := []contract.Message{{Role: "user", Content: "hi"}}
	set, err := Pack(ctx, store, small, 1024)
	if err != nil || set.Ref != "" || len(set.Messages) != 1 {
		t.Fatalf("small set: %+v, %v", set, err)
	}
	large := []contract.Message{{Role: "user", Content: strings.Repeat("x", 2048)}}
	set, err = Pack(ctx, store, large, 1024)
	if err != nil || set.Ref == "" || set.Messages != nil || set.Count != 1 {
		t.Fatalf("large set: %+v, %v", set, err)
	}
	again, _ := Pack(ctx, store, large, 1024)
	if again.Ref != set.Ref {
		t.Error("content addressing: the same messages must get the same reference")
	}
	got, err := Unpack(ctx, store, set)
	if err != nil || got[0].Content != large[0].Content {
		t.Fatalf("unpack: %v", err)
	}
}

func TestGetRejectsBadReferences(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, _ := NewFS(dir)
	if _, err := store.Get(ctx, "../../etc/passwd"); !errors.Is(err, fenixerr.ErrValidation) {
		t.Errorf("malformed ref: %v", err)
	}
	if _, err := store.Get(ctx, RefFor([]byte("never stored"))); err == nil || !strings.Contains(err.Error(), "not in this worker's context store") {
		t.Errorf("missing ref: %v", err)
	}
	ref, _ := store.Put(ctx, []byte(`[{"role":"user","content":"a"}]`))
	h := ref[len(refPrefix):]
	if err := os.WriteFile(filepath.Join(dir, h[:2], h+".json"), []byte(`tampered`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, ref); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("tampered content: %v", err)
	}
}
