# Runlimit for Go. Run "make help" for the targets.

GO         ?= go
PKGS       ?= ./...
BENCHCOUNT ?= 5
BENCHTIME  ?= 1s
FUZZTIME   ?= 20s
STATICCHECK_VERSION ?= v0.8.2

.DEFAULT_GOAL := help

.PHONY: help
help: ## show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-11s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: demo
demo: ## run the login admission demo on the embedded memory store
	$(GO) run ./cmd/runlimit demo

.PHONY: test
test: pgprobe ## run every test; without a PostgreSQL server, say in one line how to provide one
	$(GO) test -count=1 $(PKGS)

.PHONY: test-short
test-short: ## run only the tests that need no PostgreSQL server (go test -short)
	$(GO) test -count=1 -short $(PKGS)

# pgprobe says which PostgreSQL server the tests will use, or, when there is
# none, prints one line of advice and stops the run. It is built rather than
# run with go run, which would add a line of its own.
.PHONY: pgprobe
pgprobe:
	@probe=$$(mktemp); trap 'rm -f "$$probe"' EXIT; \
		$(GO) build -o "$$probe" ./internal/pgtest/pgprobe && "$$probe"

.PHONY: test-race
test-race: pgprobe ## run every test under the race detector
	$(GO) test -count=1 -race $(PKGS)

.PHONY: bench
bench: ## run the benchmarks (BENCHCOUNT runs each, for benchstat)
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCHCOUNT) -benchtime $(BENCHTIME) ./domain/... ./adapters/memory/... ./adapters/httplimit/...

.PHONY: fuzz
fuzz: ## run each fuzz target for FUZZTIME
	@set -e; for pkg in ./domain ./adapters/memory ./adapters/httplimit; do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

.PHONY: lint
lint: ## gofmt, go vet, staticcheck and go mod tidy must be clean
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)
	$(GO) mod tidy -diff
	cd benchmarks && $(GO) vet ./... && $(GO) mod tidy -diff
