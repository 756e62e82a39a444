//go:build !race

package worker

// deadlockDetectionTimeout is the SDK's default (1 s); see
// deadlock_race.go.
const deadlockDetectionTimeout = 0
