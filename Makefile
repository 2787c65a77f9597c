# The two commands a new user needs: `make run` and `make test`.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/cairn
SQLC  := $(GO) tool -modfile=tools/go.mod sqlc

# Agent builds: one per platform under bin/agents (the Engine serves them to
# agents and installers: CAIRN_AGENT_ARTIFACTS defaults to agents/ next to
# bin/cairn), each with its build ID embedded and in a .build-id sidecar.
# AGENT_BUILD_ID=... overrides the ID (git describe, plus a hash of any
# uncommitted difference).
AGENT_PLATFORMS := linux-amd64 windows-amd64
ifeq ($(origin AGENT_BUILD_ID), undefined)
AGENT_BUILD_ID := $(shell scripts/agent-build-id.sh)
endif
# AGENT_BUILD_SEQ orders builds (the commit count): agents refuse an update
# to a lower one unless it is a signed rollback (docs/agent.md "Signing chain").
ifeq ($(origin AGENT_BUILD_SEQ), undefined)
AGENT_BUILD_SEQ := $(shell git rev-list --count HEAD 2>/dev/null || echo 0)
endif
AGENT_LDFLAGS := -X github.com/cairn-rmm/cairn/agent/version.BuildID=$(AGENT_BUILD_ID) -X github.com/cairn-rmm/cairn/agent/version.BuildSeq=$(AGENT_BUILD_SEQ)

.PHONY: run test test-chain-go test-chain-web bench bench-tunnel build agents web deps-run deps-test generate check-generated test-go test-openapi-lint test-wine test-fuzz fuzz run-fuzz test-web test-e2e clean

## run: build everything and start the Engine with private PostgreSQL and embedded Temporal
run: deps-run build
	./$(BIN) serve

## test: every test: Go (unit + integration), console unit tests, browser end-to-end tests
test: deps-test build
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then \
		echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	GOOS=windows $(GO) build -o /dev/null ./cmd/cairn-agent
	GOOS=windows $(GO) vet ./agent/... ./cmd/cairn-agent/
	$(MAKE) --no-print-directory test-openapi-lint
	$(MAKE) --no-print-directory -j2 --output-sync=recurse test-chain-go test-chain-web

# The test stages run as two chains side by side (docs/benchmarks.md "Test
# suite time"): run one after the other they kept about one core of two
# busy, because most stages wait (on Engines, agents, PostgreSQL, Temporal,
# Wine) more than they compute. Each chain's stages run in order, and each
# stage's output is printed, whole, when the stage ends. Wine is only in the
# web chain: test-wine and test-e2e share the prefix and each stops its
# wineserver when done, so they must not overlap. The Go chain alone uses
# .data/test-postgres.
test-chain-go:
	./$(BIN) dev-postgres --dir .data/test-postgres -- $(MAKE) --no-print-directory test-go
	./$(BIN) dev-postgres --dir .data/test-postgres -- $(MAKE) --no-print-directory test-fuzz

test-chain-web:
	$(MAKE) --no-print-directory test-web
	$(MAKE) --no-print-directory test-wine
	$(MAKE) --no-print-directory test-e2e

## bench: Engine figures under simulated agents (docs/benchmarks.md); BENCH_COUNTS=1000,5000 BENCH_DURATION=3m BENCH_FLAGS=
BENCH_COUNTS   ?= 1000,5000
BENCH_DURATION ?= 3m
BENCH_FLAGS    ?=
bench: deps-run build
	@mkdir -p .data
	set -o pipefail; $(GO) run ./scripts/bench --counts $(BENCH_COUNTS) --duration $(BENCH_DURATION) $(BENCH_FLAGS) | tee .data/bench-results.jsonl

## bench-tunnel: the Engine's WireGuard throughput on one core (docs/benchmarks.md "Remote desktop: WireGuard throughput")
bench-tunnel:
	GOMAXPROCS=1 $(GO) test -count=1 -run '^$$' -bench TunnelThroughput -benchtime 1024x ./internal/tunnels/

# test-go runs through gotestsum (a tool in go.mod): packages with their
# times, failing tests with their whole output, then the slowest tests, so
# every CI log says where the suite's time went. -parallel 4: the end-to-end
# packages (./cmd/cairn, ./api) mostly wait on Engines, agents and timers,
# and the default (GOMAXPROCS, 2 here) left one of two slots waiting.
TEST_GO_JSON := .data/test-go.json
test-go: api/testdata/dpopjs/node_modules
	@mkdir -p .data
	@rc=0; $(GO) tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg \
		--jsonfile $(TEST_GO_JSON) -- -count=1 -timeout 20m -parallel 4 ./... || rc=$$?; \
	echo "slowest tests (over 30 s):"; \
	$(GO) tool gotestsum tool slowest --jsonfile $(TEST_GO_JSON) --threshold 30s; \
	exit $$rc

# test-wine: the agent's Windows code, tested as Windows binaries under
# Debian's Wine (scripts/wine/run-tests.sh; docs/agent.md "Windows tests
# under Wine"). A package joins by being listed here.
WINE_TEST_PKGS := \
	./agent \
	./agent/proto \
	./agent/inventory \
	./agent/operations \
	./agent/registry \
	./agent/service \
	./agent/files \
	./agent/automation \
	./agent/patches \
	./agent/patches/ops

# Packages whose tests read the screen run on Wine's X11 driver over Xvfb.
WINE_TEST_XVFB_PKGS := ./agent/vnc/rfbserver

test-wine:
	scripts/wine/run-tests.sh $(WINE_TEST_PKGS)
	WINE_TEST_XVFB=1 scripts/wine/run-tests.sh $(WINE_TEST_XVFB_PKGS)
	# agent/vnc: the role with its Windows server; not the x11vnc tests
	# (t.TempDir's cleanup fails under Wine 8) nor the tunnel one
	# (wireguard-go's UDP bind does not run under Wine).
	WINE_TEST_XVFB=1 WINE_TEST_FLAGS='-test.run ^(TestWindowsRoleServesPaintedPixels|TestInProcessServer|TestInProcessServerAdmitsOnlyTheEngine|TestInProcessServerNeedsTheTunnelListener)$$' \
		scripts/wine/run-tests.sh ./agent/vnc

# Fuzz targets as package:target (go test -fuzz takes one of each per run).
FUZZ_TARGETS := \
	./internal/jsonbody:FuzzDecode \
	./internal/devicetrust:FuzzVerifyProof \
	./internal/devicetrust:FuzzMatchHTU \
	./agent/inventory:FuzzInventoryParsers \
	./internal/enrollment:FuzzEnrollRequest \
	./internal/enrollment:FuzzNonceUse \
	./internal/agentgateway:FuzzSocketFrames
FUZZTIME ?= 5m

# test-fuzz: each fuzz target for a fixed number of executions (needs
# DATABASE_URL, as test-go: `make test` runs it under dev-postgres). Finds
# are written to the package's testdata/fuzz and fail the run; commit them
# once fixed, and they stay in every later `go test` as regression seeds.
# A count, not a duration: Go 1.26's fuzz coordinator can report its own
# -fuzztime deadline as a failure ("context deadline exceeded", no input;
# golang/go#75804, fixed in Go 1.27), which failed CI on a loaded machine.
# 40,000 executions take 2 to 14 s per target here.
test-fuzz:
	@$(MAKE) --no-print-directory run-fuzz FUZZTIME=40000x

## fuzz: every fuzz target for FUZZTIME (default 5m) each, over a private PostgreSQL
fuzz: deps-test build
	./$(BIN) dev-postgres --dir .data/test-postgres -- $(MAKE) --no-print-directory run-fuzz FUZZTIME=$(FUZZTIME)

run-fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} in $${t%%:*} for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

test-web: web/node_modules
	cd web && npm test

## test-openapi-lint: lint docs/openapi.json as an API consumer would (Redocly CLI, its recommended rules: docs/redocly.yaml); fails on any error
# Offline: the CLI comes from web/node_modules (npm ci), and its telemetry
# and update check are off.
test-openapi-lint: web/node_modules
	cd web && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true REDOCLY_SUPPRESS_NOTIFICATIONS=true \
		npx --no-install redocly lint --config ../docs/redocly.yaml ../docs/openapi.json

# The Windows agent's specs run it under Wine: run-tests.sh with no
# package only prepares the prefix (.data/wine) and its shim.
test-e2e: web/node_modules agents
	scripts/wine/run-tests.sh
	cd web && CAIRN_E2E_ENGINE_BIN=$(CURDIR)/$(BIN) CAIRN_E2E_AGENT_BIN=$(CURDIR)/bin/cairn-agent CAIRN_E2E_WINEPREFIX=$(CURDIR)/.data/wine npm run e2e

## build: the console, embedded into the Engine binary, and the agent builds
build: web agents
	$(GO) build -o $(BIN) ./cmd/cairn

## agents: bin/agents/<platform>/cairn-agent[.exe] (+ .build-id, .build-seq) and bin/cairn-agent for this host
agents:
	@for p in $(AGENT_PLATFORMS); do \
		os=$${p%-*}; arch=$${p#*-}; ext=; if [ "$$os" = windows ]; then ext=.exe; fi; \
		out=bin/agents/$$p/cairn-agent$$ext; \
		echo "agent $$p: $$out (build $(AGENT_BUILD_ID))"; \
		GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(AGENT_LDFLAGS)" -o $$out ./cmd/cairn-agent || exit 1; \
		echo "$(AGENT_BUILD_ID)" > $$out.build-id; \
		echo "$(AGENT_BUILD_SEQ)" > $$out.build-seq; \
	done
	$(GO) build -ldflags "$(AGENT_LDFLAGS)" -o bin/cairn-agent ./cmd/cairn-agent

web: web/node_modules
	cd web && npm run build

web/node_modules: web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	@touch web/node_modules

# panva's dpop package, which api/dpop_interop_test.go signs proofs with.
api/testdata/dpopjs/node_modules: api/testdata/dpopjs/package-lock.json
	cd api/testdata/dpopjs && npm ci --no-audit --no-fund
	@touch api/testdata/dpopjs/node_modules

deps-run:
	@scripts/deps.sh run

deps-test:
	@scripts/deps.sh test

# Generated and committed: sqlc code (db/sqlc), the API document generated
# from the route table (docs/openapi.json) and the console's types generated
# from that document (web/src/api/openapi.gen.ts).
GENERATED := db/ docs/openapi.json web/src/api/openapi.gen.ts

## generate: regenerate sqlc code, the API document from the route table, and the console's API types from it
generate: web/node_modules
	$(SQLC) generate
	$(GO) run ./scripts/openapi -o docs/openapi.json
	cd web && npx openapi-typescript ../docs/openapi.json -o src/api/openapi.gen.ts

## check-generated: fail when committed generated code differs from a fresh generation
check-generated: generate
	@if [ -n "$$(git status --porcelain -- $(GENERATED))" ]; then \
		echo "generated code is stale: run 'make generate' and commit"; git status --short -- $(GENERATED); exit 1; fi

clean:
	rm -rf bin web/dist/assets web/dist/index.html
