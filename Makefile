# hookbus — make run (the demo on an embedded NATS server), make test, make bench.
GO        ?= go
STORE     ?= .hookbus
LISTEN    ?= 127.0.0.1:4222
SESSION   ?= demo
PROMPT    ?= What time is it, and what is 6*7?
BIN       := bin
PKGS      := ./...
TESTFLAGS ?= -race -count=1 -timeout 15m
BENCHTIME ?= 2s
BENCHCOUNT ?= 5

.PHONY: all build install run test test-faults e2e vet staticcheck unit bench bench-tlog bench-scale fuzz clean browser sandbox ui sdk-ts schemas

all: build

## build: bin/loop and bin/observer, and bin/hookbus-hook (static: without cgo it starts a millisecond
## sooner, loading no libc). The first build compiles every dependency (the NATS server among
## them): a few minutes with no output on a cold Go cache, so it says so before it starts.
build:
	@echo "== go build -o $(BIN)/ ./cmd/loop ./cmd/observer   (the first build compiles every dependency, the NATS server among them: a few minutes without output; later builds take seconds)"
	$(GO) build -o $(BIN)/ ./cmd/loop ./cmd/observer
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/hookbus-hook

## install: loop, observer and hookbus-hook on your PATH ($(go env GOPATH)/bin), for them without bin/.
install:
	$(GO) install ./cmd/loop ./cmd/observer
	CGO_ENABLED=0 $(GO) install ./cmd/hookbus-hook

## run: a demo agent run on the embedded default (store ./.hookbus), every stage traced, an in-process hook at work, then its replay.
run: build
	@echo "== loop run (embedded NATS, store $(STORE), session $(SESSION), the demo's in-process hook)"
	$(BIN)/loop run --store $(STORE) --listen $(LISTEN) --session $(SESSION) --trace --demo-hook "$(PROMPT)"
	@echo
	@echo "== observer replay --session $(SESSION)   (reads $(STORE) offline: no server is running now)"
	$(BIN)/observer replay --store $(STORE) --session $(SESSION)
	@echo
	@echo "== the hook: hook.decided shows demo-redactor's patch; tool.result keeps the raw clock for auditors"
	@echo "== a remote hook plugs in the same way, from another process: README.md, \"Three terminals\":"
	@echo "   $(BIN)/loop server --listen $(LISTEN)   # terminal 1: a bus that stays up"
	@echo "   $(BIN)/observer hooks add --nats nats://$(LISTEN) --stage tool.before --plugin freeze && nats --server nats://$(LISTEN) reply 'hookbus.hook.tool.before.freeze' '{\"decision\":\"deny\",\"reason\":\"deploy freeze\"}' --queue freeze   # terminal 2"
	@echo "   $(BIN)/loop run --nats nats://$(LISTEN) --trace \"What is 6*7?\"   # terminal 3"

## browser: install Debian's chromium for the web page's browser tests (skipped when a browser is
## already on PATH or $CHROME_PATH is set; needs root or sudo).
browser:
	@if [ -n "$$CHROME_PATH" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1 || command -v headless_shell >/dev/null 2>&1; then \
	  echo "browser: found one, nothing to install"; \
	else \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  { $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; } || \
	    echo "browser: could not install chromium (no root, no sudo, or no apt): the browser tests will skip, saying so"; \
	fi

## sandbox: install Debian's bubblewrap, the sandbox of Bash commands (an agent's bash.sandbox, loop
## --sandbox) and of its tests (skipped when bwrap is already on PATH; needs root or sudo).
sandbox:
	@if command -v bwrap >/dev/null 2>&1; then \
	  echo "sandbox: bwrap found, nothing to install"; \
	else \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  { $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq bubblewrap; } || \
	    echo "sandbox: could not install bubblewrap (no root, no sudo, or no apt): the sandbox tests will skip, saying so"; \
	fi

## sdk-ts: the TypeScript SDK (sdk/typescript): its packages from the committed lockfile (npm ci), then
## its build (tsc). make test runs its tests (the conformance suite over NATS, the AsyncAPI parser) when
## it is built, and skips them, saying so, otherwise.
NPM ?= npm
sdk-ts:
	cd sdk/typescript && $(NPM) ci --ignore-scripts --no-audit --no-fund && $(NPM) run build

## schemas: the JSON Schemas (docs/schema) and the AsyncAPI document (docs/asyncapi.yaml) from the Go
## types, then the TypeScript SDK's types from the schemas (needs make sdk-ts first).
schemas:
	$(GO) generate ./cmd/internal/schemagen
	cd sdk/typescript && $(NPM) run gen

## ui: the web timeline over the demo's store (make run first): http://127.0.0.1:8080/
ui: build
	$(BIN)/observer ui --store $(STORE) --listen 127.0.0.1:8080

## test: vet, staticcheck and every test with the race detector.
test: vet staticcheck unit

## test-faults: the hard-fault runs: nats-server, workers and plugins as processes, faults dealt with
## SIGKILL and SIGSTOP, and one randomized fault schedule on a 3-node cluster configured by deploy/nats (R3,
## each process its own user; node faults besides the workers' and the interceptor's): 8 minutes of faults
## (10 at most, until 400 runs were submitted), about 10 minutes in all when every run ends, up to 25 when some
## never do (the drain waits 10 minutes for them). HOOKBUS_FAULT_SEED=N deals a logged schedule again; HOOKBUS_FAULT_SCHEDULES=N runs N (raise
## FAULTFLAGS' -timeout by 25m for each one more); HOOKBUS_FAULT_TOPOLOGY=single runs it on one nats-server.
## test/integration/doc.go says what they prove. About 25-30 minutes, 40 at most, without the race detector.
FAULTFLAGS ?= -count=1 -timeout 50m -v
test-faults:
	HOOKBUS_FAULTS=1 $(GO) test $(FAULTFLAGS) -run '^TestFault' ./test/integration

## e2e: the real coding agents' CLIs, Claude Code, Gemini CLI, Codex CLI, GitHub Copilot CLI, Qwen
## Code, Factory Droid and Cline (npm packages at the pinned versions below, installed in parallel,
## each into $(E2E_CACHE)/<cli> unless that version is there already; a spec may name several
## packages, comma-separated), every hook event sent to loop agent-hook, and OpenCode and Kilo Code
## with hookbus' plugin posting to loop gateway (with the model provider package their config
## names), against fake model APIs (the newer CLIs against a loop fake-model process, as a user runs
## them; test/e2e/doc.go). A CLI that cannot be installed is reported, and its tests skip, saying
## so; "make test" skips them all.
NPM_INSTALL    ?= $(NPM) install --no-audit --no-fund
E2E_CACHE      ?= $(HOME)/.cache/hookbus
CLAUDE_VERSION ?= 2.1.332
GEMINI_VERSION ?= 0.61.0
CODEX_VERSION  ?= 0.169.0
COPILOT_VERSION ?= 1.0.102
QWEN_VERSION   ?= 0.24.4
FACTORY_VERSION ?= 0.225.1
FACTORY_BIN_VERSION ?= 0.225.2
CLINE_VERSION  ?= 3.0.65
OPENCODE_VERSION ?= 1.18.33
KILO_VERSION     ?= 7.7.7
E2E_PROVIDER     ?= @ai-sdk/openai-compatible@2.0.92
E2E_CLIS       := claude=@anthropic-ai/claude-code@$(CLAUDE_VERSION) gemini=@google/gemini-cli@$(GEMINI_VERSION) codex=@openai/codex@$(CODEX_VERSION)
E2E_CLIS       += copilot=@github/copilot@$(COPILOT_VERSION) qwen=@qwen-code/qwen-code@$(QWEN_VERSION) \
                  factory=@factory/cli@$(FACTORY_VERSION),@factory/cli-linux-x64@$(FACTORY_BIN_VERSION) cline=cline@$(CLINE_VERSION) \
                  opencode=opencode-ai@$(OPENCODE_VERSION),$(E2E_PROVIDER) kilo=@kilocode/cli@$(KILO_VERSION),$(E2E_PROVIDER)
E2EFLAGS       ?= -count=1 -timeout 30m -v
e2e_space      := $(subst ,, )
E2E_PATH        = $(subst $(e2e_space),,$(foreach c,$(E2E_CLIS),$(E2E_CACHE)/$(firstword $(subst =, ,$(c)))/node_modules/.bin:))
e2e:
	@mkdir -p "$(E2E_CACHE)"; for c in $(E2E_CLIS); do \
	  name=$${c%%=*}; specs=$$(echo "$${c#*=}" | tr , ' '); spec=$${specs%% *}; pkg=$${spec%@*}; version=$${spec##*@}; dir="$(E2E_CACHE)/$$name"; \
	  have=$$(node -p "require('$$dir/node_modules/$$pkg/package.json').version" 2>/dev/null); \
	  if [ "$$have" = "$$version" ]; then \
	    echo "e2e: $$specs is in $$dir"; \
	  else ( start=$$(date +%s); \
	    if $(NPM_INSTALL) --prefix "$$dir" $$specs >"$$dir.log" 2>&1; then \
	      echo "e2e: installed $$specs into $$dir in $$(( $$(date +%s) - start ))s"; \
	    else \
	      echo "e2e: could not install $$specs into $$dir (see $$dir.log): its tests will skip, saying so"; \
	    fi ) & \
	  fi; \
	done; wait
	cd sdk/opencode-plugin && node --test
	PATH="$(E2E_PATH)$$PATH" \
	  $(GO) test $(E2EFLAGS) ./test/e2e

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) tool staticcheck $(PKGS)

unit:
	$(GO) test $(TESTFLAGS) $(PKGS)

BENCHES   := 'Benchmark(RemoteRoundTrip|RawRequestReply|RemoteChain3|RawRequestReply3|ChainOneInterceptor|BareFuncWithTimeout|Publish|RawPublishAsync|Replay|RawOrderedConsumer|PublishCheckpointed)$$'

POLICYBENCHES := 'Benchmark(Decision|Temporal)$$'

## bench: benchmarks against raw nats.go in the same run, then the ratio table (publish_checkpointed:
## the publish benchmark with a checkpointer following the stream); then policy evaluation: one
## decision's p50 and p99 at 1, 10 and 100 rules, and a temporal rule in sessions of 10 and 10,000 calls;
## then a command hook's cost per event (hookbus-hook, an exec of the real binary, p50/p99) next to the
## gateway's (an http hook's, and one HTTP/1.0 request on a connection of its own) and an exec of true.
bench:
	$(GO) test -run '^$$' -bench $(BENCHES) -benchtime $(BENCHTIME) -count $(BENCHCOUNT) ./bus ./bus/remote ./interceptors ./tlog/tlogbus | tee bench.txt
	$(GO) test -run '^$$' -bench $(POLICYBENCHES) -benchtime 20000x -count $(BENCHCOUNT) ./policy | tee -a bench.txt
	$(GO) run ./cmd/internal/benchreport < bench.txt
	$(GO) test -run '^$$' -bench 'HookClient$$' -benchtime 1x -count $(BENCHCOUNT) ./cmd/loop | tee bench-hook.txt

## bench-tlog: the transparency log's costs on a stream of 100,000 1 KiB events: verifying it against
## its checkpoints (observer verify --checkpoint), checkpointing it from scratch, a run's proof size.
bench-tlog:
	$(GO) test -run '^$$' -bench 'BenchmarkVerifyStream$$' -benchtime 1x -count 3 ./tlog/tlogbus

## bench-scale: hookbus under load, worker, interceptor and nats-server each a process (a few minutes):
## latency at 10/100/1,000 runs in flight, cost per event at saturation vs raw JetStream async
## publish, 1 vs 2 workers, and the worker's CPU profile. SCALEFLAGS passes flags (go run
## ./cmd/internal/benchscale -h lists them), e.g. SCALEFLAGS='--levels 10,100 --window 10s'.
SCALEFLAGS ?=
bench-scale: build
	$(GO) build -o $(BIN)/ ./cmd/internal/benchscale
	$(BIN)/benchscale --loop $(BIN)/loop --go $(GO) $(SCALEFLAGS) | tee bench-scale.txt

## fuzz: a short run of every fuzz target (FUZZTIME each).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf $(BIN) bench.txt bench-hook.txt bench-scale.txt sdk/typescript/dist sdk/typescript/build
