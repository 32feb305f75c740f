package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/cmd/internal/cli"
)

func TestPickRun(t *testing.T) {
	runs := []string{"01KAB3C4D5E6AAAA", "01KAB3C4D5E6BBBB", "01KAB3C4D5F0CCCC", "r1", "r10"}
	for _, tc := range []struct {
		prefix, want, err string
		usage             bool
	}{
		{"01KAB3C4D5F0", "01KAB3C4D5F0CCCC", "", false},
		{"01KAB3C4D5E6AAAA", "01KAB3C4D5E6AAAA", "", false},
		{"r1", "r1", "", false}, // a whole id wins over the ids it starts
		{"01KAB3C4D5E6", "", `--run "01KAB3C4D5E6" is ambiguous: 2 runs start with it (01KAB3C4D5E6AAAA, 01KAB3C4D5E6BBBB)`, true},
		{"ZZ", "", `no run id starts with "ZZ"`, false},
	} {
		var matching []string
		for _, r := range runs {
			if strings.HasPrefix(r, tc.prefix) {
				matching = append(matching, r)
			}
		}
		got, err := pick(tc.prefix, matching)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("pick(%q) = %q, %v; want %q", tc.prefix, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || errors.Is(err, cli.ErrUsage) != tc.usage {
			t.Errorf("pick(%q) = %v; want an error saying %q (usage %v)", tc.prefix, err, tc.err, tc.usage)
		}
	}
	ff := filterFlags{run: "01KAB3C4D5E6…"}
	if ff.runPrefix() != "01KAB3C4D5E6" {
		t.Fatalf("the ellipsis of a copied id stays: %q", ff.runPrefix())
	}
}
