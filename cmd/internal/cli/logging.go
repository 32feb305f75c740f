package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
)

// VerboseHelp is the help of every command's -v flag.
const VerboseHelp = "also log debug output on stderr (warnings and errors always print)"

// Log formats and levels (--log-format, --log-level).
const (
	LogText = "text"
	LogJSON = "json"
)

// LogFlags are the logging flags every command takes: --log-format text
// (the default: readable lines) or json (one JSON object a line, slog's
// JSON handler, for log pipelines), --log-level, and -v.
type LogFlags struct {
	Format string
	Level  string
	// Verbose is -v: the same as --log-level debug.
	Verbose bool
}

// Register defines the flags on fs.
func (l *LogFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&l.Format, "log-format", LogText, "how logs are written on stderr: text, or json (one JSON object a line, with what the command says as it starts and stops)")
	fs.StringVar(&l.Level, "log-level", "", "the least level logged: debug, info, warn or error (default warn with --log-format text, info with json)")
	fs.BoolVarP(&l.Verbose, "verbose", "v", false, VerboseHelp)
}

// Check refuses a format or level it does not know (ErrUsage).
func (l *LogFlags) Check() error {
	switch l.Format {
	case LogText, LogJSON:
	default:
		return fmt.Errorf("%w: --log-format %q: give text or json", ErrUsage, l.Format)
	}
	if _, err := l.level(); err != nil {
		return err
	}
	return nil
}

// level is the least level logged.
func (l *LogFlags) level() (slog.Level, error) {
	if l.Verbose {
		return slog.LevelDebug, nil
	}
	switch strings.ToLower(l.Level) {
	case "":
		if l.Format == LogJSON {
			return slog.LevelInfo, nil
		}
		return slog.LevelWarn, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%w: --log-level %q: give debug, info, warn or error", ErrUsage, l.Level)
}

// Logger is the command's logger, writing on w.
func (l *LogFlags) Logger(w io.Writer) *slog.Logger {
	level, err := l.level()
	if err != nil {
		level = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: level}
	if l.Format == LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Say writes what a command says about itself (which bus it uses, where
// it listens, that it drains): with text logs a line on w, with JSON logs
// an info record whose msg is the line.
func (l *LogFlags) Say(w io.Writer, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if l.Format != LogJSON {
		fmt.Fprintln(w, msg)
		return
	}
	l.Logger(w).Log(context.Background(), slog.LevelInfo, msg)
}

// Logger is the text logger of a command's -v flag: warnings and errors
// on w, debug output too when verbose.
func Logger(verbose bool, w io.Writer) *slog.Logger {
	return (&LogFlags{Format: LogText, Verbose: verbose}).Logger(w)
}
