# Jakiro. `make demo` runs the RFP vs server-reply comparison; `make test`
# runs every test, including the verbs provider on soft-RoCE in a QEMU VM.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
# The e2e tests start servers and clients as processes; keep packages
# sequential on a 2-core machine.
TESTFLAGS ?= -race -count=1 -p 1 -timeout 20m

.PHONY: all build build-rdma static-bench test test-unit test-rdma lint fuzz stress memcapable demo figures bench bench-deps clean results-rdma

all: build

# The commit `--version` prints where Go stamps none (GOFLAGS=-buildvcs=false,
# git worktrees); see cmd/internal/version.
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)$(shell git status --porcelain 2>/dev/null | grep -q . && echo +dirty)
LDFLAGS := -X github.com/jakiro-kv/jakiro/cmd/internal/version.commit=$(COMMIT)

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/jakiro ./cmd/jakiro
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/jakiro-bench ./cmd/jakiro-bench

## static-bench: a static jakiro-bench (no cgo) for a bigger machine
## where nothing can be fetched; see scripts/scale-bigger.sh.
static-bench:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/static/jakiro-bench ./cmd/jakiro-bench

## build-rdma: binaries with the verbs provider (rdma://); needs rdma-core headers.
build-rdma:
	dpkg-query -W libibverbs-dev librdmacm-dev >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends libibverbs-dev librdmacm-dev; }
	$(GO) build -tags rdma -ldflags '$(LDFLAGS)' -o bin/jakiro ./cmd/jakiro
	$(GO) build -tags rdma -ldflags '$(LDFLAGS)' -o bin/jakiro-bench ./cmd/jakiro-bench

## test: formatting, vet, every unit/e2e/conformance test with -race, then
## the verbs provider and the RFP end-to-end tests on soft-RoCE in a VM.
test: lint test-unit fuzz stress memcapable test-rdma

# staticcheck at a fixed version, fetched through the module proxy.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) mod tidy -diff
	@# internal/ holds leaf helpers: they import no Jakiro package, so every layer may use them.
	@bad=$$($(GO) list -f '{{range .Imports}}{{$$.ImportPath}} imports {{.}}{{"\n"}}{{end}}' ./internal/... | grep 'imports github.com/jakiro-kv/jakiro/'); if [ -n "$$bad" ]; then echo "$$bad"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# The allocation tests skip under -race (its runtime allocates on its
# own): they run once more without it.
test-unit:
	$(GO) test $(TESTFLAGS) ./...
	$(GO) test -count=1 -run 'Allocs|Allocate' ./...

## fuzz: every fuzz target (decoders of peer bytes, kv) for FUZZTIME each,
## starting from its seed corpus in testdata/fuzz.
FUZZTIME ?= 5s
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

## stress: jakiro-bench stress (hot keys, self-validating values, every
## mode at once from 3 processes) against a real `jakiro server` on shm and
## tcp for STRESSTIME each; fails on any torn or stale value, any error, or
## a server that outlives SIGTERM by 2 s.
STRESSTIME ?= 5s
stress: build
	scripts/stress.sh shm --duration $(STRESSTIME) --mode all
	scripts/stress.sh tcp --duration $(STRESSTIME) --mode all

## memcapable: memcached's protocol conformance tests (memccapable, from
## libmemcached-tools) against `jakiro server --memcached`, with 1 and 2
## partitions, every test must pass; then cas races and counters from
## several pymemcache clients. Installs both with apt-get if missing.
memcapable: build
	{ command -v memccapable && /usr/bin/python3 -c 'import pymemcache'; } >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends libmemcached-tools python3-pymemcache; }
	scripts/memcapable.sh 1
	scripts/memcapable.sh 2

# RDMA: verbs conformance suite, the RFP end-to-end tests over rdma:// (all
# three modes) and a short benchmark, inside a VM with rxe0.
test-rdma:
	RDMA_TEST_PKGS="./fabric/verbs ./server" RDMA_BENCH_PKGS="./fabric/verbs ./server" RDMA_BENCHTIME=2000x \
	JAKIRO_E2E_RDMA=1 scripts/rxe-vm/test-rdma.sh
	$(GO) vet -tags rdma ./fabric/verbs ./fabric/providers

demo: build
	./bin/jakiro-bench demo

bench-deps:
	scripts/install-bench-deps.sh

## figures: regenerate every CSV and PNG in results/, then README.md's
## headline table from those CSVs (`jakiro-bench readme`).
figures: build bench-deps
	./bin/jakiro-bench figures --out results
	./bin/jakiro-bench readme --results results --readme README.md

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1s ./kv ./fabric/shm ./server

clean:
	rm -rf bin

## results-rdma: RFP vs reply vs hybrid over verbs on soft-RoCE (emulation) into results/.
results-rdma:
	scripts/rxe-vm/rdma-results.sh
