// Package faults holds Fenix's fault tests: they run against the real
// Temporal CLI dev server and the worker binary, and break things on
// purpose — SIGKILL the worker during a long tool call, restart the
// server mid-run, push many assignments through at once — to check that
// no assignment is lost, run twice or left without an explicit outcome.
//
// The tests are in the _test.go files; `go test -short` skips them.
package faults
