package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Output formats of the commands that list things.
const (
	OutputTable = "table"
	OutputText  = "text"
	OutputJSON  = "json"
)

// Output is the --output (-o) flag of a command that lists or prints
// records: its first format (table, or text for a timeline) is the
// default, json the other; --json is kept as the same as --output json.
type Output struct {
	Format  string
	formats []string
}

// Register defines --output, -o and --json on fs; jsonHelp says what JSON
// is printed ("one JSON object a run per line").
func (o *Output) Register(fs *pflag.FlagSet, jsonHelp string, formats ...string) {
	if len(formats) == 0 {
		formats = []string{OutputTable, OutputJSON}
	}
	o.formats, o.Format = formats, formats[0]
	fs.VarP((*outputValue)(o), "output", "o", "output format: "+strings.Join(formats, " or ")+" (json: "+jsonHelp+")")
	fs.BoolFunc("json", "the same as --output json", func(string) error {
		o.Format = OutputJSON
		return nil
	})
}

// JSON reports whether the output is JSON.
func (o *Output) JSON() bool { return o.Format == OutputJSON }

type outputValue Output

func (v *outputValue) String() string { return v.Format }
func (v *outputValue) Type() string   { return "FORMAT" }
func (v *outputValue) Set(s string) error {
	if !slices.Contains(v.formats, s) {
		return fmt.Errorf("give %s", strings.Join(v.formats, " or "))
	}
	v.Format = s
	return nil
}
