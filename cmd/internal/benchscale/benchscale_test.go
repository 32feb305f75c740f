package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

func TestParseProcStat(t *testing.T) {
	// The name holds a space and a parenthesis: fields count from the last ')'.
	line := "4242 (loop serve) (x)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 12 0 100 0 0"
	got, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 325 * clockTick; got != want {
		t.Fatalf("cpu = %v, want %v", got, want)
	}
	for _, bad := range []string{"4242 loop S 1", "1 (x) S 1 2 3", "1 (x) S 1 2 3 4 5 6 7 8 9 a b c"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q) = nil error", bad)
		}
	}
}

func TestParseMachine(t *testing.T) {
	a, err := parseMachine("cpu  100 0 50 800 50 0 0 0 0 0")
	if err != nil {
		t.Fatal(err)
	}
	if a.busy != 150 || a.total != 1000 {
		t.Fatalf("busy %d total %d, want 150 1000", a.busy, a.total)
	}
	b, _ := parseMachine("cpu  200 0 100 1100 100 0 0 0 0 0")
	if got := busyShare(a, b); got != 0.3 { // 150 busy of 500
		t.Fatalf("busy share %v, want 0.3", got)
	}
	if _, err := parseMachine("intr 1 2 3"); err == nil {
		t.Fatal("parseMachine accepted a line that is not the cpu line")
	}
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	p50, p99 := percentiles(ds)
	if p50 != 50*time.Millisecond || p99 != 99*time.Millisecond {
		t.Fatalf("p50 %v p99 %v, want 50ms 99ms", p50, p99)
	}
	if ds[0] != 100*time.Millisecond {
		t.Fatal("percentiles sorted its argument")
	}
	if p50, p99 := percentiles(nil); p50 != 0 || p99 != 0 {
		t.Fatalf("empty: %v %v", p50, p99)
	}
	if p50, p99 := percentiles([]time.Duration{7}); p50 != 7 || p99 != 7 {
		t.Fatalf("one: %v %v", p50, p99)
	}
}

func TestRawMessages(t *testing.T) {
	stored := &nats.Msg{
		Subject: "hookbus.evt.a.s.tool.before",
		Header: nats.Header{
			events.HeaderMsgID:                    {"01OLD"},
			"ce-id":                               {"01OLD"},
			"ce-type":                             {"hookbus.tool.before"},
			"Nats-Expected-Last-Subject-Sequence": {"12"},
			"Nats-Expected-Last-Subject-Sequence-Subject": {"hookbus.evt.a.s.run.started"},
		},
		Data: []byte(`{"x":1}`),
	}
	out := rawMessages([]*nats.Msg{stored})
	m := out[0]
	if m.Subject != rawPrefix+stored.Subject || string(m.Data) != `{"x":1}` {
		t.Fatalf("subject %q data %q", m.Subject, m.Data)
	}
	id := m.Header.Get(events.HeaderMsgID)
	if id == "01OLD" || m.Header.Get("ce-id") != id {
		t.Fatalf("ids: msg %q ce %q", id, m.Header.Get("ce-id"))
	}
	if m.Header.Get("Xats-Expected-Last-Subject-Sequence") != "12" || m.Header.Get("Nats-Expected-Last-Subject-Sequence") != "" {
		t.Fatalf("fence headers not renamed: %v", m.Header)
	}
	if stored.Header.Get("ce-id") != "01OLD" {
		t.Fatal("rawMessages changed the stored message")
	}
}

func TestParseFlags(t *testing.T) {
	var sb strings.Builder
	for _, args := range [][]string{
		{"--levels", "10,x"},
		{"--levels", "0"},
		{"--window", "10ms"},
		{"--sat-runs", "0"},
		{"--loop", "/nonexistent/loop"},
		{"extra"},
	} {
		if _, err := parseFlags(args, &sb); !errors.Is(err, errUsage) {
			t.Errorf("parseFlags(%q) = %v, want errUsage", args, err)
		}
	}
}

func TestAPIOp(t *testing.T) {
	for subject, want := range map[string]string{
		"$JS.API.CONSUMER.CREATE.HOOKBUS_EVENTS.abc.hookbus.evt.a.s.>": "CONSUMER.CREATE",
		"$JS.API.STREAM.INFO.HOOKBUS_EVENTS":                           "STREAM.INFO",
		"$JS.API.STREAM.MSG.GET.HOOKBUS_EVENTS":                        "STREAM.MSG.GET",
		"$JS.API.DIRECT.GET.KV_hookbus_hooks":                          "DIRECT.GET",
		"$JS.API.CONSUMER.MSG.NEXT.HOOKBUS_RUNS.hookbus-workers":       "CONSUMER.MSG.NEXT",
		"$JS.API.INFO": "INFO",
		"$JS.API.x":    "(other)",
	} {
		if got := apiOp(subject); got != want {
			t.Errorf("apiOp(%q) = %q, want %q", subject, got, want)
		}
	}
	if got := sortedOps(map[string]int{"B": 1, "A": 1, "C": 5}); !slices.Equal(got, []string{"C", "A", "B"}) {
		t.Errorf("sortedOps = %v", got)
	}
	if got, want := apiPull("$JS.API.CONSUMER.MSG.NEXT.HOOKBUS_RUNS.hookbus-workers"), "CONSUMER.MSG.NEXT HOOKBUS_RUNS/hookbus-workers"; got != want {
		t.Errorf("apiPull = %q, want %q", got, want)
	}
}
