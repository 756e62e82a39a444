//go:build race

package worker

import "time"

// deadlockDetectionTimeout is how long a workflow coroutine may run
// without yielding before the SDK fails its workflow task. The race
// detector makes workflow code several times slower, so the SDK's 1 s
// fails tasks that decode megabyte results on a loaded machine — and on
// giving up, the SDK's dispatcher goes on beside the still running
// coroutine, a race the detector then reports against the test.
const deadlockDetectionTimeout = 10 * time.Second
