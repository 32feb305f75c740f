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

.PHONY: all build run test test-faults vet staticcheck unit bench fuzz clean

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

## test-faults: the hard-fault runs: nats-server, workers and plugins as processes, faults dealt with
## SIGKILL (test/integration/doc.go says what they prove); about 15-25 minutes, without the race detector.
FAULTFLAGS ?= -count=1 -timeout 60m -v
test-faults:
	HOOKBUS_FAULTS=1 $(GO) test $(FAULTFLAGS) -run '^TestFault' ./test/integration

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

## fuzz: a short run of every fuzz target.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./events

clean:
	rm -rf $(BIN) bench.txt
