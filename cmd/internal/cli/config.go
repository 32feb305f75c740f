package cli

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hookbus/hookbus/events"
	"go.yaml.in/yaml/v3"
)

// ConfigEnv names the variable that names the hookbus config file when
// --config is not given.
const ConfigEnv = "HOOKBUS_CONFIG"

const defaultConfigDesc = "$XDG_CONFIG_HOME/hookbus/config.yaml (~/.config/hookbus/config.yaml) when it exists"

// Config is the hookbus config file: what every command would otherwise
// be given on its command line, once, for each NATS context. A flag given
// wins over the file; a context's section wins over the top level:
//
//	context: prod          # the NATS context when neither --context nor $NATS_CONTEXT names one
//	prefix: hookbus
//	contexts:
//	  prod:
//	    prefix: acme
//	    replicas: 3
//	    outage: 10m
//
// Unknown keys are refused, naming them.
type Config struct {
	// Context is the NATS context of every command that is not given one.
	Context  string `yaml:"context"`
	Settings `yaml:",inline"`
	// Contexts are settings by NATS context name.
	Contexts map[string]Settings `yaml:"contexts"`
	// Path is the file it was read from ("" for none).
	Path string `yaml:"-"`
}

// Settings are the settings a config file holds, at the top level or for
// one NATS context.
type Settings struct {
	// Prefix is --prefix: the subject prefix.
	Prefix string `yaml:"prefix"`
	// Replicas is --replicas: of streams and buckets when provisioning.
	Replicas int `yaml:"replicas"`
	// Outage is --outage: how long a run waits out NATS being away.
	Outage string `yaml:"outage"`
}

// For returns the settings of the NATS context name: its section over the
// top level.
func (c *Config) For(name string) Settings {
	s := c.Settings
	if ctx, ok := c.Contexts[name]; ok && name != "" {
		if ctx.Prefix != "" {
			s.Prefix = ctx.Prefix
		}
		if ctx.Replicas != 0 {
			s.Replicas = ctx.Replicas
		}
		if ctx.Outage != "" {
			s.Outage = ctx.Outage
		}
	}
	return s
}

// outage parses Outage (0 when unset).
func (s Settings) outage() (time.Duration, error) {
	if s.Outage == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s.Outage)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("outage %q: give a positive duration (10m)", s.Outage)
	}
	return d, nil
}

func (s Settings) check() error {
	if s.Prefix != "" {
		if err := events.ValidateID("prefix", s.Prefix); err != nil {
			return err
		}
	}
	if s.Replicas < 0 {
		return fmt.Errorf("replicas %d: give 1, 3 or 5", s.Replicas)
	}
	_, err := s.outage()
	return err
}

// DefaultConfigPath is where the config file is looked for when neither
// --config nor $HOOKBUS_CONFIG names one.
func DefaultConfigPath(getenv func(string) string) string {
	if xdg := getenv("XDG_CONFIG_HOME"); xdg != "" {
		return filepath.Join(xdg, "hookbus", "config.yaml")
	}
	home, err := homeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "hookbus", "config.yaml")
}

// LoadConfig reads the config file path, else the one $HOOKBUS_CONFIG
// names, else the default one when it exists (an empty Config when it
// does not). A file named but missing, unknown keys and bad values are
// errors wrapping ErrUsage, naming the file.
func LoadConfig(path string, getenv func(string) string) (*Config, error) {
	named := cmp.Or(path, getenv(ConfigEnv))
	if named == "" {
		path = DefaultConfigPath(getenv)
	} else {
		path = named
	}
	if path == "" {
		return &Config{}, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && named == "" {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: config file: %v", ErrUsage, err)
	}
	c := &Config{Path: path}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: config file %s: %v", ErrUsage, path, err)
	}
	c.Path = path
	if err := c.Settings.check(); err != nil {
		return nil, fmt.Errorf("%w: config file %s: %v", ErrUsage, path, err)
	}
	for name, s := range c.Contexts {
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("%w: config file %s: contexts.%s: %v", ErrUsage, path, name, err)
		}
	}
	return c, nil
}
