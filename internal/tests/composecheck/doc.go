// Package composecheck validates the production-shaped Docker stack
// statically: docker-compose.yml is loaded with the compose-spec loader
// (github.com/compose-spec/compose-go/v2) and checked for what `docker
// compose up` would trip over or silently get wrong, the files it mounts
// from deploy/ are parsed with the parsers that will read them, and the
// Dockerfile's build targets are checked against the Go packages.
//
// It has only tests and needs no Docker engine: the machines that run this
// repository's test suite have none, so the stack is validated here but not
// exercised.
package composecheck
