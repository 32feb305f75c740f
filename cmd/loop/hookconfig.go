package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/spf13/pflag"
)

// configKeys are the flags a --config file may give.
var configKeys = []string{"nats", "context", "creds", "nkey", "user", "password", "token", "tls-ca", "tls-cert", "tls-key", "prefix", "agent", "policy", "timeout", "approve-modified"}

// applyConfig sets the flags of fs that file gives and the command line
// does not: a JSON object of flag names and their values as strings (or
// booleans), so that a coding agent that passes its hooks no environment
// (or one that redacts what looks like a secret) still gets the
// connection. An unknown key or a value the flag refuses is an error
// wrapping cli.ErrUsage, naming the file and the key; no value is ever
// printed.
func applyConfig(fs *pflag.FlagSet, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%w: --config: %v", cli.ErrUsage, err)
	}
	var values map[string]any
	if err := json.Unmarshal(data, &values); err != nil {
		return fmt.Errorf("%w: --config %s: not a JSON object of flags: %v", cli.ErrUsage, file, err)
	}
	given := cli.Set(fs)
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if !slices.Contains(configKeys, k) || fs.Lookup(k) == nil {
			return fmt.Errorf("%w: --config %s: %q is not a flag it may give (%s)", cli.ErrUsage, file, k, strings.Join(configKeys, ", "))
		}
		if given[k] {
			continue
		}
		var s string
		switch v := values[k].(type) {
		case string:
			s = v
		case bool:
			s = fmt.Sprint(v)
		default:
			return fmt.Errorf("%w: --config %s: %q is not a string", cli.ErrUsage, file, k)
		}
		if err := fs.Set(k, s); err != nil {
			return fmt.Errorf("%w: --config %s: %q: the flag refuses its value", cli.ErrUsage, file, k)
		}
	}
	return nil
}
