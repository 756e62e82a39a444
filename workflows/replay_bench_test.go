package workflows_test

import (
	"testing"
)

// BenchmarkReplayCalculator replays a recorded calculator call: the
// workflow code's CPU per call (and the SDK's, which every yield of a
// coroutine costs a stack walk), without the server or the stages.
func BenchmarkReplayCalculator(b *testing.B) {
	r := newReplayer(b)
	log := quietReplayLogger()
	for b.Loop() {
		if err := r.ReplayWorkflowHistoryFromJSONFile(log, "testdata/start_attributes_calculator.json"); err != nil {
			b.Fatal(err)
		}
	}
}
