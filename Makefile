# Runlimit for Go. Run "make help" for the targets.

GO         ?= go
PKGS       ?= ./...
BENCHCOUNT ?= 5
BENCHTIME  ?= 1s
FUZZTIME   ?= 20s
STATICCHECK_VERSION ?= v0.8.2
# Modules of their own beside the main one, so that their dependencies
# never reach it: make test, test-short, test-race and lint cover them too.
EXAMPLE_MODULES ?= examples/loginservice
# Flags for make loginservice, such as ARGS='-identity-limit 3'.
ARGS ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: demo
demo: ## run the login admission demo on the embedded memory store
	$(GO) run ./cmd/runlimit demo

.PHONY: loginservice
loginservice: ## run examples/loginservice on 127.0.0.1:8080 (memory; PostgreSQL with RUNLIMIT_DATABASE_URL)
	cd examples/loginservice && $(GO) run . $(ARGS)

.PHONY: test
test: pgprobe ## run every test, the example modules' too; without a PostgreSQL server, say in one line how to provide one
	@$(call alone_last,$(GO) test -count=1)
	@$(call in_example_modules,$(GO) test -count=1 ./...)

.PHONY: test-short
test-short: ## run only the tests that need no PostgreSQL server (go test -short)
	$(GO) test -count=1 -short $(PKGS)
	@$(call in_example_modules,$(GO) test -count=1 -short ./...)

# ALONE are the packages whose tests measure latency against deadlines
# (the PostgreSQL store's recovery and lock-timeout tests): alone_last runs
# a go test command over PKGS but them, then over them with no other test
# binary beside them, so that another package's burst of work is not
# measured as the store's.
ALONE ?= github.com/runlimit/runlimit/adapters/postgres
alone_last = set -e; pkgs=$$($(GO) list $(PKGS)); \
	rest=$$(printf '%s\n' $$pkgs | grep -vxF $(patsubst %,-e %,$(ALONE)) || true); \
	alone=$$(printf '%s\n' $$pkgs | grep -xF $(patsubst %,-e %,$(ALONE)) || true); \
	if [ -n "$$rest" ]; then echo "$(1) <$(PKGS) but $(ALONE)>"; $(1) $$rest; fi; \
	if [ -n "$$alone" ]; then echo "$(1)" $$alone; $(1) $$alone; fi

# in_example_modules runs a command in each example module, saying where.
in_example_modules = set -e; for m in $(EXAMPLE_MODULES); do echo "cd $$m && $(1)"; (cd $$m && $(1)); done

# pgprobe says which PostgreSQL server the tests will use, or, when there is
# none, prints one line of advice and stops the run. It is built rather than
# run with go run, which would add a line of its own.
.PHONY: pgprobe
pgprobe:
	@probe=$$(mktemp); trap 'rm -f "$$probe"' EXIT; \
		$(GO) build -o "$$probe" ./internal/pgtest/pgprobe && "$$probe"

.PHONY: test-race
test-race: pgprobe ## run every test under the race detector
	@$(call alone_last,$(GO) test -count=1 -race)
	@$(call in_example_modules,$(GO) test -count=1 -race ./...)

.PHONY: crash-probe
crash-probe: ## kill, restart, terminate and fill the disk of a throwaway PostgreSQL cluster under load (initdb on PORT, default 25433)
	sh adapters/postgres/testdata/crashprobe.sh

.PHONY: pooler-probe
pooler-probe: ## run the PostgreSQL store through a PgBouncer of its own in each pool mode (needs pgbouncer; installs nothing)
	sh adapters/postgres/testdata/poolerprobe.sh

.PHONY: bench
bench: ## run the benchmarks (BENCHCOUNT runs each, for benchstat)
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCHCOUNT) -benchtime $(BENCHTIME) ./domain/... ./adapters/memory/... ./adapters/httplimit/...

# FUZZPKGS are the main module's packages with a fuzz target, found by
# their source, so that a new target is run without being listed here.
FUZZPKGS = $(shell grep -rl --include='*_test.go' '^func Fuzz' . | grep -v -e '^./benchmarks/' -e '^./examples/' | xargs -n1 dirname | sort -u)

.PHONY: fuzz
fuzz: ## run each fuzz target for FUZZTIME
	@set -e; for pkg in $(FUZZPKGS); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

# BENCH_STATICCHECK runs staticcheck on the benchmarks module. CI, which
# starts with empty caches, skips it (BENCH_STATICCHECK=true): the module's
# peers and Redis client cost it a cold analysis for code no user links,
# which go vet and go mod tidy still check there.
BENCH_STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

.PHONY: lint
lint: ## gofmt, go vet, staticcheck and go mod tidy must be clean
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)
	$(GO) mod tidy -diff
	cd benchmarks && $(GO) vet ./... && $(BENCH_STATICCHECK) && $(GO) mod tidy -diff
	@$(call in_example_modules,$(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./... && $(GO) mod tidy -diff)
