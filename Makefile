# tabwarden — build, test and release entry points.
#   make test      system deps (when missing), then go test -race ./...
#   make demo      system deps, build, ./tabwarden demo
#   make build     ./tabwarden with version ldflags
#   make test-wall the policy corpus again with the request hook compiled out
#                  (tag tabwarden_nohook): the network wall alone must hold
#   make fuzz      each fuzz target for FUZZTIME (default 30s)
#   make lint      golangci-lint (pinned, built from the module proxy) with .golangci.yml
#   make release-check   goreleaser check (slow: builds goreleaser; not part of test)

GO         ?= go
BIN        ?= tabwarden
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT     ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS    := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
FUZZTIME   ?= 30s
GORELEASER ?= github.com/goreleaser/goreleaser/v2@v2.15.1
GOLANGCI   ?= github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

.PHONY: all build test test-wall demo deps fuzz lint release-check clean

all: build

# The first build compiles every dependency (minutes on a small or busy
# machine); say so before the silence.
build:
	@echo "make: building ./$(BIN) (the first build compiles every dependency and can take minutes)..."
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/tabwarden

test: deps
	$(GO) test -race -timeout 15m ./...

test-wall: deps
	$(GO) test -race -tags tabwarden_nohook -count=1 -timeout 15m -run '^TestCorpus$$' ./agent/corpus/

# The demo runs headed; on a machine without a display use `xvfb-run -a make demo`
# (or `tabwarden demo --headless`, without signing in by hand).
demo: deps build
	./$(BIN) demo

deps:
	@scripts/deps.sh

# Bounded by FUZZTIME per target; a failing input lands in
# PKG/testdata/fuzz/TARGET/ and fails the run (see scripts/fuzz.sh).
fuzz:
	GO=$(GO) scripts/fuzz.sh $(FUZZTIME) ./policy:FuzzNormalizeOrigin ./policy:FuzzParse ./consent/audit:FuzzSummarize ./webmcp:FuzzSanitize ./agent:FuzzDispatchArguments ./agent:FuzzCheckURL ./internal/sitetext:FuzzSiteText ./browser/wall:FuzzWall ./browser/wall:FuzzRelayAnswer ./browser:FuzzCDPSocket

# go run builds the pinned version once and caches it; no global install.
lint:
	$(GO) run $(GOLANGCI) run ./...

release-check:
	$(GO) run $(GORELEASER) check

clean:
	rm -rf $(BIN) dist/
