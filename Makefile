# Convenience targets. Everything here is also reachable with plain `go`
# commands (see README.md); make is not required.

GO ?= go

.PHONY: demo test test-short lint record-histories rerecord-histories temporal-cli temporal-server build

demo: ## dev server + worker + sample assignment, prints the result and Web UI link
	$(GO) run ./starter demo

test: ## the whole suite, as CI runs it
	$(GO) test -race -count=1 -timeout 30m ./...

test-short: ## unit and workflow tests only (no dev server)
	$(GO) test -short -count=1 ./...

lint: ## static checks only
	$(GO) test -count=1 ./internal/tests/lint/

record-histories: ## record replay histories missing from workflows/testdata/ on a dev server
	$(GO) test -count=1 ./workflows/ -run TestReplayHistories -record -v

rerecord-histories: ## overwrite every replay history (only for intended breaking changes)
	$(GO) test -count=1 ./workflows/ -run TestReplayHistories -rerecord -v

temporal-cli: ## build the pinned Temporal CLI into $(go env GOPATH)/bin
	$(GO) install github.com/temporalio/cli/cmd/temporal@v1.5.1

temporal-server: ## build the production Temporal server the cluster test runs into $(go env GOPATH)/bin/temporal-server-v1.29.1
	$(GO) run ./internal/harness/prodserver/cmd/build

build:
	$(GO) build -o bin/worker ./worker
	$(GO) build -o bin/starter ./starter
