package mcp_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/loop/mcp"
)

func TestServerConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  mcp.ServerConfig
		want string // "" when valid
	}{
		{mcp.ServerConfig{Name: "files", Command: "files-server"}, ""},
		{mcp.ServerConfig{Name: "my-files_2", Command: "x", Args: []string{"-v"}, Env: map[string]string{"K": "v"}, Dir: "/tmp", Timeout: time.Second}, ""},
		{mcp.ServerConfig{Name: "web", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}}, ""},
		{mcp.ServerConfig{Command: "x"}, "server name is empty"},
		{mcp.ServerConfig{Name: "my.files", Command: "x"}, `not '.'`},
		{mcp.ServerConfig{Name: "my files", Command: "x"}, `not ' '`},
		{mcp.ServerConfig{Name: "a__b", Command: "x"}, `must not contain "__"`},
		{mcp.ServerConfig{Name: "a_", Command: "x"}, `end with '_'`},
		{mcp.ServerConfig{Name: "files"}, "set command"},
		{mcp.ServerConfig{Name: "files", Command: "x", URL: "http://h/"}, "not both"},
		{mcp.ServerConfig{Name: "files", Command: "x", Timeout: -time.Second}, "negative"},
		{mcp.ServerConfig{Name: "files", Command: "x", Headers: map[string]string{"A": "b"}}, "headers are for a url"},
		{mcp.ServerConfig{Name: "files", Command: "x", Env: map[string]string{"A=B": "c"}}, `env name "A=B"`},
		{mcp.ServerConfig{Name: "web", URL: "ftp://h/"}, "not an http or https URL"},
		{mcp.ServerConfig{Name: "web", URL: "/mcp"}, "not an http or https URL"},
		{mcp.ServerConfig{Name: "web", URL: "http://h/", Args: []string{"x"}}, "args, env and dir are for a stdio server"},
		{mcp.ServerConfig{Name: "web", URL: "http://h/", Headers: map[string]string{"Bad Name": "x"}}, `header name "Bad Name"`},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (!errors.Is(err, mcp.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one saying %q", tc.cfg, err, tc.want)
		}
	}
}

func TestToolName(t *testing.T) {
	if got := mcp.ToolName("github", "create_issue"); got != "mcp__github__create_issue" {
		t.Fatal(got)
	}
}
