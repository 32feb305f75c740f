package command

import (
	"reflect"
	"testing"
)

// shellWords reads a command line as sh would: quotes removed, variables
// expanded, redirection targets and what cannot be known left out, and what
// runs marked.
func TestShellWords(t *testing.T) {
	vars := map[string]string{"CLAUDE_PROJECT_DIR": "/p r", "EMPTY": ""}
	for _, tc := range []struct {
		in   string
		want []word
	}{
		{`"$CLAUDE_PROJECT_DIR"/.hooks/pre.sh`, []word{{"/p r/.hooks/pre.sh", true, false}}},
		{`${CLAUDE_PROJECT_DIR}/a 'b c' d\ e`, []word{{"/p r/a", true, false}, {"b c", false, false}, {"d e", false, false}}},
		{`X=1 bash -e x.sh arg`, []word{{"bash", true, false}, {"-e", false, false}, {"x.sh", true, true}, {"arg", false, false}}},
		{`jq .a < in.json > out 2>&1 | tee -a log; ./next`, []word{{"jq", true, false}, {".a", false, false}, {"in.json", false, false}, {"tee", true, false}, {"-a", false, false}, {"log", false, false}, {"./next", true, false}}},
		{`echo $(cat x) ${EMPTY:-def} $1 # comment`, []word{{"echo", true, false}, {"def", false, false}}},
		{`a>>b c 2>d`, []word{{"a", true, false}, {"c", false, false}}},
		{`"$(git rev-parse --show-toplevel)"/hook.sh && ok`, []word{{"ok", true, false}}},
	} {
		if got := shellWords(tc.in, vars); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("shellWords(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
