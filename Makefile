# hookbus — make run (the demo on an embedded NATS server), make test, make bench.
GO        ?= go
STORE     ?= .hookbus
SESSION   ?= demo
PROMPT    ?= What time is it, and what is 6*7?
BIN       := bin
PKGS      := ./...
TESTFLAGS ?= -race -count=1 -timeout 15m
BENCHTIME ?= 2s
BENCHCOUNT ?= 5

.PHONY: all build run test vet staticcheck unit bench fuzz clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/loop ./cmd/observer

## run: a demo agent run on the embedded default (store ./.hookbus), every stage traced, then its replay.
run: build
	@echo "== loop run (embedded NATS, store $(STORE), session $(SESSION))"
	$(BIN)/loop run --session $(SESSION) --trace "$(PROMPT)"
	@echo
	@echo "== observer replay --session $(SESSION)"
	$(BIN)/observer replay --store $(STORE) --session $(SESSION)

## test: vet, staticcheck and every test with the race detector.
test: vet staticcheck unit

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) tool staticcheck $(PKGS)

unit:
	$(GO) test $(TESTFLAGS) $(PKGS)

BENCHES   := 'Benchmark(RemoteRoundTrip|RawRequestReply|RemoteChain3|RawRequestReply3|ChainOneInterceptor|BareFuncWithTimeout|Publish|RawPublishAsync|Replay|RawOrderedConsumer)$$'

## bench: benchmarks against raw nats.go in the same run, then the ratio table.
bench:
	$(GO) test -run '^$$' -bench $(BENCHES) -benchtime $(BENCHTIME) -count $(BENCHCOUNT) ./bus ./interceptors | tee bench.txt
	$(GO) run ./internal/benchreport < bench.txt

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
	rm -rf $(BIN) bench.txt
