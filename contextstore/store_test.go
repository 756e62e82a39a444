package contextstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
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

// AppendInline must give what Pack gives for the longer list whenever
// Pack would inline it, must not touch the caller's slice, and must
// decline references and lists Pack would store.
func TestAppendInlineIsPackWithoutAStore(t *testing.T) {
	ctx := context.Background()
	store, err := NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base := []contract.Message{{Role: "user", Content: "<b>2 & 2</b>"}, {Role: "assistant", Content: "Let me compute."}}
	backing := make([]contract.Message, len(base), len(base)+4)
	copy(backing, base)
	set := contract.MessageSet{Messages: backing, Count: len(base)} // Bytes unknown, as a turn's first transcript
	more := []contract.Message{{Role: "tool", Content: "4", ToolCallID: "c1", Name: "calculator"}}
	for _, limit := range []int{0, 1024} {
		got, ok, err := AppendInline(set, more, limit)
		if err != nil || !ok {
			t.Fatalf("limit %d: ok %v, err %v", limit, ok, err)
		}
		want, err := Pack(ctx, store, append(append([]contract.Message{}, base...), more...), limit)
		if err != nil {
			t.Fatal(err)
		}
		if got.Count != want.Count || got.Bytes != want.Bytes || got.Ref != "" || len(got.Messages) != 3 || !reflect.DeepEqual(got.Messages[2], more[0]) {
			t.Fatalf("limit %d: AppendInline %+v, Pack %+v", limit, got, want)
		}
	}
	if !reflect.DeepEqual(backing[:cap(backing)][2], contract.Message{}) {
		t.Error("AppendInline wrote into the caller's backing array")
	}

	tooBig := []contract.Message{{Role: "tool", Content: strings.Repeat("x", 2048)}}
	if _, ok, err := AppendInline(set, tooBig, 1024); ok || err != nil {
		t.Errorf("a list over the limit must be left to Pack: ok %v, err %v", ok, err)
	}
	stored, err := Pack(ctx, store, tooBig, 1024)
	if err != nil || stored.Ref == "" {
		t.Fatal(stored, err)
	}
	if _, ok, err := AppendInline(stored, more, 1024); ok || err != nil {
		t.Errorf("a reference must be left to Pack: ok %v, err %v", ok, err)
	}
}
