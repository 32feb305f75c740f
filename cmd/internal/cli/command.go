package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// App is what the commands of one binary share: their streams, the global
// flags (--log-format, --log-level, -v, --config) and the exit code a
// command sets beside its error.
type App struct {
	// Name is the binary's name ("loop").
	Name string
	// Version is what --version prints.
	Version string
	In      io.Reader
	Out     io.Writer
	Err     io.Writer
	// Log are the logging flags every command takes.
	Log LogFlags
	// Config is --config: the hookbus config file (Config).
	Config string
	// Code is the exit code of a command that ends without an error and
	// not with 0 (loop's 3 and 4).
	Code int
}

// NewRoot returns the root command of a's binary: the global flags, the
// streams, --version, the completion command, and usage errors that exit
// 2. Run with no command it prints its usage on stderr and exits 2; an
// unknown command is a usage error naming it.
func (a *App) NewRoot(short, long string) *cobra.Command {
	root := &cobra.Command{
		Use:           a.Name,
		Short:         short,
		Long:          long,
		Version:       a.Version,
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Every command checks its own arguments: no suggestion of a
		// subcommand takes the place of an argument.
		DisableSuggestions: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return unknownCommand(cmd, args)
		},
	}
	root.SetIn(a.In)
	root.SetOut(a.Out)
	root.SetErr(a.Err)
	root.SetFlagErrorFunc(FlagError)
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.CompletionOptions.HiddenDefaultCmd = false
	a.Log.Register(root.PersistentFlags())
	root.PersistentFlags().StringVar(&a.Config, "config", "", "the hookbus config file: prefix, replicas and the NATS context of every command (docs/OPERATIONS.md); default $"+ConfigEnv+", else "+defaultConfigDesc)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return a.Log.Check() }
	root.InitDefaultVersionFlag()
	return root
}

// unknownCommand is a parent command run without one of its subcommands:
// its usage on stderr and a usage error.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		cmd.SetOut(cmd.ErrOrStderr())
		_ = cmd.Usage()
		return fmt.Errorf("%w: want a command (%s)", ErrUsage, strings.Join(subcommands(cmd), ", "))
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return fmt.Errorf("%w: %s", ErrUsage, msg)
}

// subcommands names cmd's visible subcommands.
func subcommands(cmd *cobra.Command) []string {
	var out []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			out = append(out, c.Name())
		}
	}
	return out
}

// Execute runs root with args and returns the exit code: see ExitCode. A
// usage mistake also says where the command's help is.
func (a *App) Execute(ctx context.Context, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	name := a.Name
	if cmd != nil {
		name = cmd.CommandPath()
	}
	code := ExitCode(a.Err, name, a.Code, err)
	if errors.Is(err, ErrUsage) {
		fmt.Fprintf(a.Err, "Run '%s --help' for usage.\n", name)
	}
	return code
}

// FlagError makes a mistake in the flags a usage error (exit 2) in the
// words of Go's flag package: "flag provided but not defined: -bogus",
// "invalid value "soon" for flag --since: ...". An undefined flag that may
// be a word of a prompt ("-5") says to put such words after "--".
func FlagError(cmd *cobra.Command, err error) error {
	var (
		notExist *pflag.NotExistError
		invalid  *pflag.InvalidValueError
		missing  *pflag.ValueRequiredError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &notExist):
		if short := notExist.GetSpecifiedShortnames(); short != "" {
			msg = fmt.Sprintf("flag provided but not defined: -%s (arguments that start with - go after --: %s [flags] -- ARGS)", short, cmd.CommandPath())
		} else {
			msg = "flag provided but not defined: -" + notExist.GetSpecifiedName()
			if s := flagSuggestions(cmd, notExist.GetSpecifiedName()); len(s) > 0 {
				msg += " (did you mean --" + strings.Join(s, " or --") + "?)"
			}
		}
	case errors.As(err, &invalid):
		msg = fmt.Sprintf("invalid value %q for flag --%s: %v", invalid.GetValue(), invalid.GetFlag().Name, errors.Unwrap(invalid))
	case errors.As(err, &missing):
		msg = "flag needs an argument: --" + missing.GetFlag().Name
	}
	return fmt.Errorf("%w: %s", ErrUsage, msg)
}

// NoArgs is the positional-argument rule of a command that takes none: an
// argument is a usage error naming it.
func NoArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, args[0])
	}
	return nil
}

// Set reports which flags of fs were given on the command line.
func Set(fs *pflag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	return set
}

// Run is the body of a command: what it does with its positional
// arguments once its flags are parsed.
type Run func(ctx context.Context, args []string) error

// Command makes a cobra command of use, its help and the flags setup
// defines on fs; setup returns the command's body. Positional arguments
// are the body's to check (NoArgsCommand for a command that takes none).
func Command(use, short, long string, setup func(fs *pflag.FlagSet) Run) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long}
	run := setup(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return run(WithCommandPath(cmd.Context(), cmd.CommandPath()), args)
	}
	return cmd
}

// NoArgsCommand is Command for a command that takes no positional
// arguments: one given is a usage error (NoArgs) before its body runs.
func NoArgsCommand(use, short, long string, setup func(fs *pflag.FlagSet) Run) *cobra.Command {
	return Command(use, short, long, func(fs *pflag.FlagSet) Run {
		run := setup(fs)
		return func(ctx context.Context, args []string) error {
			if err := NoArgs(nil, args); err != nil {
				return err
			}
			return run(ctx, args)
		}
	})
}

type commandPathKey struct{}

// WithCommandPath returns ctx carrying the path of the command that runs
// ("observer hooks add"), for what the command says about itself.
func WithCommandPath(ctx context.Context, path string) context.Context {
	return context.WithValue(ctx, commandPathKey{}, path)
}

// CommandPath is the path WithCommandPath put in ctx, else def.
func CommandPath(ctx context.Context, def string) string {
	if p, ok := ctx.Value(commandPathKey{}).(string); ok && p != "" {
		return p
	}
	return def
}

// flagSuggestions lists cmd's flags whose names are within two edits of
// name, or start with it.
func flagSuggestions(cmd *cobra.Command, name string) []string {
	var out []string
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if f.Hidden || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		if editDistance(name, f.Name) <= 2 || len(name) > 1 && strings.HasPrefix(f.Name, name) {
			out = append(out, f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return out
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
