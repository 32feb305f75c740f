package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
)

// observer provision lists what it provisioned with --output table or
// json: every stream, bucket and object store with its replicas and
// retention; the default keeps its one line.
func TestProvisionOutput(t *testing.T) {
	srv, _ := bustest.Start(t, bustest.WithListener())
	url := srv.ClientURL()
	code, out, errOut := observe(t, "provision", "--nats", url, "--max-age", "720h")
	if code != exitOK || !strings.HasPrefix(out, "provisioned HOOKBUS_EVENTS") {
		t.Fatalf("text: %d %q %q", code, out, errOut)
	}
	code, out, errOut = observe(t, "provision", "--nats", url, "-o", "json")
	if code != exitOK {
		t.Fatalf("json: %d %q", code, errOut)
	}
	var doc struct {
		Assets []asset `json:"assets"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	byName := map[string]asset{}
	for _, a := range doc.Assets {
		byName[a.Name] = a
	}
	if len(doc.Assets) != 15 || byName["HOOKBUS_EVENTS"] != (asset{Kind: "stream", Name: "HOOKBUS_EVENTS", Replicas: 1, MaxAge: "720h0m0s"}) ||
		byName["hookbus_hooks"].Kind != "kv" || byName["hookbus_payloads"].Kind != "object store" ||
		byName["HOOKBUS_COUNTERS"] != (asset{Kind: "stream", Name: "HOOKBUS_COUNTERS", Replicas: 1, MaxAge: "768h0m0s"}) {
		t.Fatalf("assets: %+v", doc.Assets)
	}
	code, out, errOut = observe(t, "provision", "--nats", url, "--output", "table")
	if code != exitOK || !strings.HasPrefix(out, "KIND") || !strings.Contains(out, "HOOKBUS_EVENTS") || !strings.Contains(out, "720h0m0s") {
		t.Fatalf("table: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := observe(t, "provision", "--nats", url, "-o", "yaml"); code != exitUsage || !strings.Contains(errOut, "give text or table or json") {
		t.Fatalf("-o yaml: %d %q", code, errOut)
	}
}
