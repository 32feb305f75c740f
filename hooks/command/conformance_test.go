package command_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/claudecode/claudecodetest"
	"github.com/hookbus/hookbus/hooks/command"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/interceptors/interceptorstest"
)

// clientURL, set in a hook's environment, makes the test binary a command
// hook that forwards its stdin to a claudecodetest server: its answer on
// stdout (exit 0), or its error on stderr (exit 1).
const clientURL = "HOOKBUS_TEST_HOOK_SERVER"

func TestMain(m *testing.M) {
	if url := os.Getenv(clientURL); url != "" {
		os.Exit(hookClient(url))
	}
	os.Exit(m.Run())
}

func hookClient(url string) int {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(in))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		os.Stderr.Write(body)
		return 1
	}
	os.Stdout.Write(body)
	return 0
}

var claudeCodeFeatures = interceptorstest.Features{
	PanicKind:        events.FailError,
	Stages:           []events.Stage{events.StageIntake, events.StageToolBefore, events.StageToolAfter, events.StageStop, events.StageSubagentBefore},
	NoMock:           true,
	NoAnnotations:    true,
	NoPayloadReplace: true,
	NoPatchReply:     true,
	NoStageCheck:     true,
}

// TestConformance runs the conformance suite with each interceptor served
// as a Claude Code hook server and called by a command hook: a process
// that reads the input on stdin and answers on stdout. The process is curl
// when it is installed (it starts fast), else this test binary (a -race
// binary takes about a second to start, close to the suite's timeouts on
// a loaded machine).
func TestConformance(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	curl, _ := exec.LookPath("curl")
	interceptorstest.Run(t, func(t *testing.T, reg interceptors.Registration, ic interceptors.Interceptor) interceptors.Interceptor {
		url := claudecodetest.Serve(t, reg, ic)
		evs := claudecode.EventsFor(reg.Stage)
		if len(evs) == 0 {
			t.Fatalf("no Claude Code event for %s: the features should have skipped this case", reg.Stage)
		}
		client := fmt.Sprintf("%s=%q exec %q", clientURL, url, exe)
		if curl != "" { // --fail-with-body: an error status exits 22 with the body (the error) on stdout
			client = fmt.Sprintf("exec %q -s --fail-with-body -H 'Content-Type: application/json' --data-binary @- %q", curl, url)
		}
		handler, _ := json.Marshal(map[string]string{"type": "command", "command": client})
		h, err := command.New(command.Config{Root: t.TempDir(), KillGrace: 100 * time.Millisecond}, evs[0], handler)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}, claudeCodeFeatures)
}
