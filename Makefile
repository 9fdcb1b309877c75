# hoster: `make help` lists the targets.
GO      ?= go
FUZZTIME ?= 30s
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/hoster-dev/hoster/internal/version.Version=$(VERSION)
STATICCHECK_VERSION := v0.8.2
STATICCHECK := bin/staticcheck-$(STATICCHECK_VERSION)/staticcheck
# Tests never read the developer's own client configuration.
TESTENV := XDG_CONFIG_HOME=/nonexistent/hoster-test HOSTER_CONFIG_SERVER= HOSTER_CONFIG_APITOKEN= HOSTER_CONFIG_CERTSHA256=
# The TypeScript compiler scripts/test-deps.sh installs, for gen --check's tests.
TSC := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/hoster-test/typescript/node_modules/.bin/tsc
TESTENV += HOSTER_TSC=$$(test -x $(TSC) && echo $(TSC))

.PHONY: help build test test-deps bench lint fuzz clean demo demo-smoke docs

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/hoster and bin/hoster-server
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/hoster ./cmd/hoster
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/hoster-server ./cmd/hoster-server

# Every package runs under the race detector: 4 minutes on the 2-core VM with
# a cold build cache, within the 15 minutes make test may take. nats-server
# (the fleet's JetStream) has a data race of its own, both accesses inside it
# (scripts/upstreamrace says which): a package failed by that alone runs once
# more, under the race detector still; any other failure fails at once.
test: test-deps ## vet and run every test under the race detector (installs caddy and chromium when it can)
	$(GO) vet ./...
	@log=$$(mktemp); trap 'rm -f "$$log" "$$log.rc"' EXIT; \
	{ $(TESTENV) $(GO) test -race -count=1 -timeout 12m ./... 2>&1; echo $$? >"$$log.rc"; } | tee "$$log"; \
	test "$$(cat "$$log.rc")" = 0 && exit 0; \
	again=$$($(GO) run ./scripts/upstreamrace "$$log") && test -n "$$again" || exit 1; \
	echo "failed only by nats-server's own data race, once more:" $$again; \
	$(TESTENV) $(GO) test -race -count=1 -timeout 5m $$again

test-deps: ## install what the integration tests need, when missing and possible
	@sh scripts/test-deps.sh

bench: ## run the benchmarks and the bench/ scripts (long: about 19 minutes)
	$(GO) test -run '^$$' -bench . -benchtime 3x -timeout 60m ./...
	$(GO) run ./bench/load -players 500 -seconds 20
	$(GO) run ./bench/load -players 2000 -seconds 20
	bash bench/sync.sh 2000 200
	bash bench/isolation.sh
	bash bench/isolation-cost.sh
	bash bench/relay.sh

lint: $(STATICCHECK) ## gofmt, go vet and staticcheck
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(STATICCHECK) ./...

# staticcheck at a pinned version, installed once into bin/ (the newest release
# that builds with the module's Go).
$(STATICCHECK):
	GOBIN=$(CURDIR)/$(dir $(STATICCHECK)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

fuzz: ## fuzz the path checks and parsers, FUZZTIME (30s) each
	$(GO) test -run '^$$' -fuzz FuzzCleanPath -fuzztime $(FUZZTIME) ./pkg/store
	$(GO) test -run '^$$' -fuzz FuzzServe -fuzztime $(FUZZTIME) ./pkg/pages
	$(GO) test -run '^$$' -fuzz FuzzIsGameLogPath -fuzztime $(FUZZTIME) ./pkg/layout
	$(GO) test -run '^$$' -fuzz FuzzDecoder -fuzztime $(FUZZTIME) ./pkg/compact
	$(GO) test -run '^$$' -fuzz FuzzFrameReader -fuzztime $(FUZZTIME) ./pkg/runtime
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime $(FUZZTIME) ./pkg/game
	$(GO) test -run '^$$' -fuzz FuzzValidate -fuzztime $(FUZZTIME) ./pkg/game
	$(GO) test -run '^$$' -fuzz FuzzParseCommand -fuzztime $(FUZZTIME) ./pkg/runtime
	$(GO) test -run '^$$' -fuzz FuzzPlanAgainstAHostileTree -fuzztime $(FUZZTIME) ./pkg/mirror
	$(GO) test -run '^$$' -fuzz FuzzNormalisePin -fuzztime $(FUZZTIME) ./pkg/apiclient
	$(GO) test -run '^$$' -fuzz FuzzPureHook -fuzztime $(FUZZTIME) ./pkg/runtime
	$(GO) test -run '^$$' -fuzz FuzzQuickCommand -fuzztime $(FUZZTIME) ./pkg/runtime
	$(GO) test -run '^$$' -fuzz FuzzRecords -fuzztime $(FUZZTIME) ./pkg/runtime
	$(GO) test -run '^$$' -fuzz FuzzPlainFile -fuzztime $(FUZZTIME) ./pkg/apiclient

docs: ## regenerate the command-line reference, docs/cli, from the cobra commands
	$(GO) run ./internal/docgen -out docs/cli

clean: ## remove build output
	rm -rf bin

demo: build ## run the example sites with hoster dev: prints the game's URL, follows every save
	bin/hoster dev examples/sites

demo-smoke: build ## the demo's whole path once (hoster dev, the page, one socket round trip, Ctrl-C)
	$(GO) run ./examples/demo -bin bin -sites examples/sites
