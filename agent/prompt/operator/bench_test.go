package operator

import (
	"context"
	"testing"

	"github.com/fenixrt/fenix/internal/harness/benchfs"
)

// How the Operator State snapshot a round sends costs with the size of the
// workspace (listing, bounding, writing operator_state.json):
//
//	go test -run '^$' -bench 'SnapshotWorkspace' -benchtime 20x ./agent/prompt/operator
//
// "tree" is a project tree (directories of 100 files, ten per level
// above); "flat" puts every file in the workspace root. The listing keeps
// DefaultLimits.MaxFiles entries; files_listed reports how many it kept.
func BenchmarkSnapshotWorkspace(b *testing.B) {
	for _, shape := range []struct {
		name  string
		build func(testing.TB, string, int) string
	}{{"tree", benchfs.Tree}, {"flat", benchfs.Flat}} {
		for _, sz := range benchfs.Sizes {
			b.Run(shape.name+"/"+sz.Name, func(b *testing.B) {
				dir := b.TempDir()
				shape.build(b, dir, sz.Files)
				var s Snapshotter
				scope := Scope{WorkspaceRoot: dir, ConversationID: "conv-bench", Profile: "main"}
				var snap Snapshot
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					var err error
					if snap, err = s.Snapshot(context.Background(), scope); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(snap.State.Files)), "files_listed")
				b.ReportMetric(float64(snap.Bytes), "state_bytes")
			})
		}
	}
}
