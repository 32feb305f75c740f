package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/spf13/pflag"
)

// promptFlags say where the prompt comes from: the words after the flags,
// "-" (stdin) or --prompt-file FILE.
type promptFlags struct {
	file string
}

func (p *promptFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&p.file, "prompt-file", "", "read the prompt from FILE (\"-\": stdin) instead of the arguments")
}

// read returns the prompt: the positional words joined by spaces, stdin
// when they are "-", or the --prompt-file. Surrounding whitespace is
// dropped; an empty prompt, a prompt given two ways and one that is not
// UTF-8 text are usage errors.
func (p *promptFlags) read(pos []string, stdin io.Reader) (string, error) {
	var text, from string
	switch {
	case p.file != "" && len(pos) > 0:
		return "", fmt.Errorf("%w: give the prompt as arguments or with --prompt-file, not both", cli.ErrUsage)
	case p.file == "-" || len(pos) == 1 && pos[0] == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		text, from = string(b), "stdin"
	case p.file != "":
		b, err := os.ReadFile(p.file)
		if err != nil {
			return "", fmt.Errorf("%w: --prompt-file: %v", cli.ErrUsage, err)
		}
		text, from = string(b), p.file
	default:
		for _, w := range pos {
			if w == "-" {
				return "", fmt.Errorf("%w: \"-\" (the prompt from stdin) stands alone", cli.ErrUsage)
			}
		}
		text, from = strings.Join(pos, " "), "the arguments"
	}
	text = strings.TrimSpace(text)
	switch {
	case text == "" && from == "the arguments":
		return "", fmt.Errorf("%w: no PROMPT given (words, \"-\" for stdin, or --prompt-file FILE)", cli.ErrUsage)
	case text == "":
		return "", fmt.Errorf("%w: the prompt from %s is empty", cli.ErrUsage, from)
	case !utf8.ValidString(text):
		return "", fmt.Errorf("%w: the prompt from %s is not valid UTF-8 text", cli.ErrUsage, from)
	}
	return text, nil
}
