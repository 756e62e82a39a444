package workflows_test

import (
	"testing"
)

// BenchmarkReplayCalculator replays a recorded calculator call: the
// workflow code's CPU per call (and the SDK's, which every yield of a
// coroutine costs a stack walk), without the server or the stages. A
// call of fenix-shape 11 (three signal listener coroutines) beside one
// of fenix-shape 14 (one).
//
//	go test -run '^$' -bench ReplayCalculator -benchtime 400x -count 3 ./workflows
func BenchmarkReplayCalculator(b *testing.B) {
	for _, shape := range []struct{ name, file string }{
		{"shape=11", "testdata/start_attributes_calculator.json"},
		{"shape=14", "testdata/one_listener_calculator.json"},
	} {
		b.Run(shape.name, func(b *testing.B) {
			r := newReplayer(b)
			log := quietReplayLogger()
			for b.Loop() {
				if err := r.ReplayWorkflowHistoryFromJSONFile(log, shape.file); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
