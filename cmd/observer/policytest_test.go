package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/audit/policytest"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/policies"
)

// fleetYAML is the policy file the policy test's library is tested with.
const fleetYAML = "../../audit/policytest/testdata/fleet.yaml"

// observer policy test replays the recorded calls of the four harnesses
// through a policy file over NATS: the report as JSON and text (a summary
// table first, then per agent and harness, then the flips), stored for
// the page; with --fail-on-flips it exits 3; --harness narrows it.
func TestPolicyTestCommand(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	publishFleet(t, b)
	url := srv.ClientURL()

	code, out, errOut := observe(t, "policy", "test", "-f", fleetYAML, "--since", "0", "-o", "json", "--nats", url)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep policytest.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, p := range rep.Policies {
		for _, f := range p.Flips {
			got = append(got, p.Name+" "+string(f.Kind)+" "+f.Harness+" "+f.CallID)
		}
	}
	want := []string{
		"no-destructive-shell denied hookbus call_2",
		"no-destructive-shell asked hookbus call_3",
		"no-destructive-shell allowed claude toolu_04",
		"no-destructive-shell denied gemini gm_1",
		"no-destructive-shell denied codex cx_1",
		"no-exfil denied claude toolu_02",
		"quiet-npm rewritten claude toolu_03",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("flips\n%q\nwant\n%q", got, want)
	}

	// Stored for the page: each policy's part, as its last test.
	raw, err := policies.New(b).GetTest(context.Background(), "no-exfil")
	if err != nil {
		t.Fatal(err)
	}
	var stored policytest.Report
	if err := json.Unmarshal(raw, &stored); err != nil || len(stored.Policies) != 1 || stored.Policies[0].Name != "no-exfil" || len(stored.Policies[0].Flips) != 1 {
		t.Fatalf("stored test %v: %s", err, raw)
	}

	code, out, errOut = observe(t, "policy", "test", "-f", fleetYAML, "--since", "0", "--fail-on-flips", "--no-store", "--nats", url)
	if code != exitFlips || !strings.Contains(errOut, "7 calls would change") {
		t.Fatalf("--fail-on-flips: exit %d: %s", code, errOut)
	}
	for _, line := range []string{
		"3 policies tested on ",
		"7 calls would change",
		"POLICY                MODE     ROLLOUT  CALLS  SENT  MATCHED  DENIED  ALLOWED  REWRITTEN  ASKED  FAILED  NOT REBUILT",
		"no-destructive-shell  audit    100%     15     12    11       3       1        0          1      0       0",
		"Per agent and harness:",
		"no-destructive-shell: 5 calls would change (mode audit: it would only record them)",
		"  denied   codex-cli    codex    01KFZCX0000000000000000001  cx_1      shell              shell \"bash -lc rm -rf dist\"  allow                               rm-rf  \"destructive shell command\"",
		"no-exfil: 1 call would change (enforced)",
	} {
		if !strings.Contains(out, line) {
			t.Fatalf("the text does not say %q:\n%s", line, out)
		}
	}
	if i, j := strings.Index(out, "Per agent"), strings.Index(out, "no-destructive-shell: 5 calls"); i < 0 || j < i {
		t.Fatalf("the summary comes first, then the counts, then the flips:\n%s", out)
	}

	code, out, errOut = observe(t, "policy", "test", "-f", fleetYAML, "--since", "0", "--harness", "codex", "--fail-on-flips", "--no-store", "--nats", url)
	if code != exitFlips || !strings.Contains(out, "1 call would change") || !strings.Contains(out, "cx_1") || strings.Contains(out, "gm_1") {
		t.Fatalf("--harness codex: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = observe(t, "policy", "test", "-f", fleetYAML, "--since", "0", "--agent", "nobody", "--fail-on-flips", "--no-store", "--nats", url)
	if code != exitOK || !strings.Contains(out, "No recorded call was read") {
		t.Fatalf("--agent nobody: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = observe(t, "policy", "test", "-f", fleetYAML, "--since", "0", "--agent", "ci-*", "--fail-on-flips", "--no-store", "--nats", url)
	if code != exitOK || !strings.Contains(out, "No call would change.") {
		t.Fatalf("--agent ci-* (its match condition leaves the ci- agent out): exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := observe(t, "policy", "test", "--nats", url); code != exitUsage || !strings.Contains(errOut, "-f FILE") {
		t.Fatalf("no file: exit %d %s", code, errOut)
	}
}
