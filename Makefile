# leaninformer: `make test` and `make bench` are the two commands a fresh
# machine needs; each builds or downloads what it uses.
SHELL := /usr/bin/env bash -o pipefail
GO ?= go
GOLANGCI_LINT_VERSION ?= v2.15.0
# -count=1: a warm GOCACHE (a persistent runner) must not replay earlier passes.
GO_TEST_FLAGS ?= -count=1 -race -timeout 45m

# Point at existing envtest binaries by exporting KUBEBUILDER_ASSETS; otherwise
# hack/envtest-binaries.sh builds (once) and prints the cached folder.
ASSETS = $(or $(KUBEBUILDER_ASSETS),$(shell hack/envtest-binaries.sh))

.PHONY: all test unit vet lint pins envtest-binaries bench docs load shard-bench chaos clean

all: test

envtest-binaries:
	@hack/envtest-binaries.sh

vet:
	$(GO) vet ./...

# --allow-serial-runners: wait for another golangci-lint holding the lock (a
# parallel make, an editor) instead of exiting 3, "parallel golangci-lint is running".
lint:
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run --allow-serial-runners ./...

# test: lint, vet, then every test with the race detector, including the
# envtest suites against a real API server, then every Go benchmark once with
# -short (at most 1,000 objects: internal/benchsize) and without the race
# detector (the tests ran with it), so that none breaks unnoticed; it prints
# how long that last step took. pkg/intern's tests run once more without the
# race detector, which turns off the runtime's tiny allocator, the case
# TestTableForgetsShortValues is about.
# pins: the versions of Kubernetes we build and test against, as the build
# resolves them (a new dependency can raise them through go.mod's minimal
# version selection, and a replace can swap them). Change them here and in
# go.mod together, on purpose.
PINS := k8s.io/api v0.37.2|k8s.io/apimachinery v0.37.2|k8s.io/client-go v0.37.2|sigs.k8s.io/controller-runtime v0.25.2
pins:
	@got="$$($(GO) list -m -f '{{.Path}} {{.Version}}{{with .Replace}} => {{.Path}} {{.Version}}{{end}}' k8s.io/api k8s.io/apimachinery k8s.io/client-go sigs.k8s.io/controller-runtime | paste -sd'|')"; \
	test "$$got" = "$(PINS)" || { echo "pins: the build resolves '$$got', want '$(PINS)'" >&2; exit 1; }

test: vet lint pins
	@assets="$(ASSETS)"; test -n "$$assets" || { echo "no envtest binaries" >&2; exit 1; }; \
	echo "KUBEBUILDER_ASSETS=$$assets"; \
	KUBEBUILDER_ASSETS="$$assets" $(GO) test $(GO_TEST_FLAGS) ./... && \
	echo "pkg/intern's tests without the race detector, which turns the tiny allocator off:" && \
	$(GO) test -count=1 ./pkg/intern/ && \
	echo "every benchmark once, at a small N:" && \
	time KUBEBUILDER_ASSETS="$$assets" $(GO) test -short -timeout 20m -run '^$$' -bench . -benchtime 1x ./...

# unit: every test but the envtest suites (a few examples still start an API
# server of their own).
unit:
	$(GO) test $(GO_TEST_FLAGS) $$($(GO) list ./... | grep -v /test/envtest)

# bench: hack/bench, memory and time side by side with client-go on a real
# API server (envtest, or --kubeconfig); results in _output/bench/, and the
# results file (commit, machine, command, every run) in $(BENCH_PUBLISH),
# from which hack/docgen then writes the README's and docs/benchmarks.md's
# generated blocks and docs/benchmarks/memory.svg: commit them together.
# Flags go through BENCH_FLAGS, e.g. make bench BENCH_FLAGS='--objects 100000
# --runs 1'; BENCH_PUBLISH= leaves the committed results alone. The *_FLAGS
# go to the shell as given ($(value ...)): make would otherwise expand the $
# that ends a --variants regexp such as '^(client-go|ours-stream)$'.
BENCH_FLAGS ?=
BENCH_PUBLISH ?= docs/benchmarks
bench:
	@assets="$(ASSETS)"; test -n "$$assets" || { echo "no envtest binaries" >&2; exit 1; }; \
	$(GO) build -o _output/bench/bench ./hack/bench && \
	KUBEBUILDER_ASSETS="$$assets" _output/bench/bench --publish "$(BENCH_PUBLISH)" $(value BENCH_FLAGS) && \
	$(GO) run ./hack/docgen

# docs: the generated blocks and chart from the committed results file.
docs:
	$(GO) run ./hack/docgen

# load: hack/load, informers under sustained update rates with a fast and a
# slow handler, side by side with client-go, on a real API server (envtest, or
# --kubeconfig) and on the fake one; results in _output/load/. `--runs 3` took 79
# and 80 minutes here (docs/load.md); the default single run, about a third. Flags go through LOAD_FLAGS, e.g.
# make load LOAD_FLAGS='--backends fake --rates 5000,max --runs 3'.
LOAD_FLAGS ?=
load:
	@assets="$(ASSETS)"; test -n "$$assets" || { echo "no envtest binaries" >&2; exit 1; }; \
	$(GO) build -o _output/load/load ./hack/load && \
	KUBEBUILDER_ASSETS="$$assets" _output/load/load $(value LOAD_FLAGS)

# shard-bench: hack/shardbench, sharded replicas (pkg/shard) at 30,000
# objects: per-replica store, sync time and reconcile throughput for 1, 2
# and 4 replicas, server-side and client-side filtering, and the hand-over
# after a replica is killed; results in _output/shardbench/. Flags through
# SHARD_BENCH_FLAGS, e.g. make shard-bench SHARD_BENCH_FLAGS='--objects 10000 --handover='.
SHARD_BENCH_FLAGS ?=
shard-bench:
	@assets="$(ASSETS)"; test -n "$$assets" || { echo "no envtest binaries" >&2; exit 1; }; \
	$(GO) build -o _output/shardbench/shardbench ./hack/shardbench && \
	KUBEBUILDER_ASSETS="$$assets" _output/shardbench/shardbench $(value SHARD_BENCH_FLAGS)

# chaos: the long chaos schedule (its own API server) and the long soak
# (test/envtest labels chaos and soak), then a short run of each fuzz target.
# LEANINFORMER_CHAOS_SEED=n replays a schedule; FUZZTIME sets each fuzz run.
FUZZTIME ?= 30s
chaos:
	@assets="$(ASSETS)"; test -n "$$assets" || { echo "no envtest binaries" >&2; exit 1; }; \
	KUBEBUILDER_ASSETS="$$assets" LEANINFORMER_CHAOS=long $(GO) test -race -count=1 -timeout 60m -v \
		./test/envtest/ -ginkgo.label-filter='chaos || soak'
	$(GO) test -run '^$$' -fuzz '^FuzzStoreWriterAgainstModel$$' -fuzztime $(FUZZTIME) ./pkg/informer/
	$(GO) test -run '^$$' -fuzz '^FuzzWatcherAgainstServer$$' -fuzztime $(FUZZTIME) ./pkg/listerwatcher/

clean:
	rm -rf bin _output
