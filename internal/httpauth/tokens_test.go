package httpauth_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/internal/httpauth"
)

func TestParseTokens(t *testing.T) {
	tk := tokens(t, "# tokens\n\n"+aliceToken+"  alice  agents=claude-alice,claude-ci\n  "+ciToken+"\n")
	if tk.Len() != 2 {
		t.Fatalf("%d tokens", tk.Len())
	}
	if tok, ok := tk.Lookup(aliceToken); !ok || tok.Name != "alice" || !slices.Equal(tok.Agents, []string{"claude-alice", "claude-ci"}) {
		t.Fatalf("alice: %+v %v", tok, ok)
	}
	if tok, ok := tk.Lookup(ciToken); !ok || !strings.HasPrefix(tok.Name, "token-") || len(tok.Name) != len("token-")+8 || tok.Agents != nil {
		t.Fatalf("the unnamed token: %+v %v", tok, ok)
	}
	for _, s := range []string{"", aliceToken[1:], aliceToken + " ", "alice"} {
		if _, ok := tk.Lookup(s); ok {
			t.Errorf("Lookup(%q) found a token", s)
		}
	}
	for file, says := range map[string]string{
		"short-token alice\n":                           "httpauth: invalid config: tokens, line 1: a token of 11 characters is too short",
		"# x\n" + aliceToken + " alice bob\n":           "httpauth: invalid config: tokens, line 2: a token has one name",
		aliceToken + " agents=\n":                       "agents=",
		aliceToken + " agents=a.b\n":                    "agents=",
		aliceToken + " agents=a agents=b\n":             "agents= given twice",
		aliceToken + " alice\n" + aliceToken + " bob\n": "httpauth: invalid config: tokens, line 2: the token of bob is given twice",
	} {
		_, err := httpauth.ParseTokens(strings.NewReader(file), "tokens")
		if !errors.Is(err, httpauth.ErrInvalidConfig) || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v, want it to say %q", file, err, says)
		}
		if err != nil && strings.Contains(err.Error(), aliceToken) {
			t.Errorf("%q: the error shows the token: %v", file, err)
		}
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("# none yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := httpauth.LoadTokens(empty); !errors.Is(err, httpauth.ErrInvalidConfig) || !strings.Contains(err.Error(), "holds no token") {
		t.Errorf("an empty file: %v", err)
	}
	if _, err := httpauth.LoadTokens(filepath.Join(dir, "missing")); !errors.Is(err, httpauth.ErrInvalidConfig) {
		t.Errorf("a missing file: %v", err)
	}
}
