//go:build linux

package tools_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/loop/tools"
)

// sandboxedBash returns a Bash in the bubblewrap sandbox over a new root,
// and a directory outside the root holding "secret". It skips the test,
// saying why, where bubblewrap is not installed or does not work.
func sandboxedBash(t *testing.T, network bool) (b *tools.Bash, root, outside string) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed: the sandbox tests need it (make sandbox installs it)")
	}
	root, outside = t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(outside, "secret"), "top secret\n")
	b, err := tools.NewBash(tools.BashConfig{Root: root, Sandbox: tools.SandboxBubblewrap, SandboxNetwork: network, KillGrace: 200e6})
	if err != nil {
		t.Skipf("bubblewrap does not work here, the sandbox tests are skipped: %v", err)
	}
	return b, root, outside
}

// The sandbox shows the root and the system directories, nothing else: a
// file outside the root cannot be read, however it is named, nor can the
// worker's home or the files of /etc it leaves out.
func TestSandboxHidesWhatIsOutsideTheRoot(t *testing.T) {
	b, _, outside := sandboxedBash(t, false)
	secret := filepath.Join(outside, "secret")
	for _, cmd := range []string{
		"cat " + secret,
		"cd / && cat " + strings.TrimPrefix(secret, "/"),
		"cat ../" + filepath.Base(outside) + "/secret",
		"ls " + outside,
		"ls /root",
		"cat /etc/shadow",
	} {
		got, err := call(t, b, obj{"command": cmd})
		if !errors.Is(err, tools.ErrExitStatus) || strings.Contains(err.Error(), "top secret") {
			t.Errorf("%s = %q, %v; want it to fail, reading nothing", cmd, got, err)
		}
	}
	// What a shell needs works.
	got, err := call(t, b, obj{"command": "echo hi | tr a-z A-Z; awk 'BEGIN{print 1+1}'; ls /usr/bin >/dev/null && echo usr"})
	if err != nil || got != "HI\n2\nusr" {
		t.Fatalf("a shell in the sandbox = %q, %v", got, err)
	}
}

// Writing inside the root works and is seen outside; writing to /etc, to
// the sandbox's / or outside the root does not, and changes nothing.
func TestSandboxWritesOnlyTheRoot(t *testing.T) {
	b, root, outside := sandboxedBash(t, false)
	got, err := call(t, b, obj{"command": "echo made inside > made.txt && mkdir -p sub && echo deeper > sub/x && echo ok"})
	if err != nil || got != "ok" {
		t.Fatalf("writing in the root = %q, %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "made.txt")); err != nil || string(b) != "made inside\n" {
		t.Fatalf("made.txt outside the sandbox: %q, %v", b, err)
	}
	name := fmt.Sprintf("hookbus-sandbox-test-%d", os.Getpid())
	for _, target := range []string{"/etc/" + name, "/" + name, "/usr/" + name, filepath.Join(outside, name)} {
		got, err := call(t, b, obj{"command": "echo pwned > " + target})
		if !errors.Is(err, tools.ErrExitStatus) {
			t.Errorf("writing %s = %q, %v; want it to fail", target, got, err)
		}
		if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after the sandboxed write: %v", target, err)
			_ = os.Remove(target)
		}
	}
	// The private /tmp is writable, and HOME is in it.
	got, err = call(t, b, obj{"command": "echo t > /tmp/t && cat /tmp/t && echo $HOME"})
	if err != nil || got != "t\n/tmp" {
		t.Fatalf("the sandbox's /tmp and HOME = %q, %v", got, err)
	}
}

// The sandbox has no network unless the agent allows it: not even the
// host's loopback. With it allowed, the same connection works.
func TestSandboxNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && head -n 1 <&3", port)

	off, _, _ := sandboxedBash(t, false)
	if got, err := call(t, off, obj{"command": connect}); !errors.Is(err, tools.ErrExitStatus) || strings.Contains(got+err.Error(), "hello") {
		t.Errorf("connecting to the host without network = %q, %v; want it to fail", got, err)
	}
	on, _, _ := sandboxedBash(t, true)
	if got, err := call(t, on, obj{"command": connect}); err != nil || got != "hello from the host" {
		t.Errorf("connecting to the host with network = %q, %v; want the greeting", got, err)
	}
}

// marked reports whether a process whose command line holds marker lives
// (a zombie does not count): /proc of the host sees the sandbox's
// processes under their host pids.
func marked(t *testing.T, marker string) []string {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), marker) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
			continue
		}
		found = append(found, d.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}

// At the timeout the whole sandboxed tree is killed: children that ignore
// SIGTERM, one in a subshell's background, none outlives the call.
func TestSandboxTimeoutKillsTheWholeTree(t *testing.T) {
	b, _, _ := sandboxedBash(t, false)
	marker := fmt.Sprintf("%d", 900000+os.Getpid()%99999)
	cmd := fmt.Sprintf(`(trap "" TERM; exec sleep %[1]s) & (trap "" TERM; sleep %[1]s & wait) & echo started; wait`, marker)
	got, err := call(t, b, obj{"command": cmd, "timeout": 1500})
	if !errors.Is(err, tools.ErrTimeout) || !strings.Contains(err.Error(), "started") {
		t.Fatalf("Bash = %q, %v; want ErrTimeout after the command started", got, err)
	}
	eventually(t, "sandboxed processes outlived the timeout", func() bool { return len(marked(t, "sleep "+marker)) == 0 })
}

// sandbox: required (and bubblewrap) refuse to build the tool where
// bubblewrap is not installed, saying so; an unknown mode, and network
// without a sandbox, are refused too.
func TestSandboxRequiredWithoutBubblewrap(t *testing.T) {
	skipUnlessUnix(t)
	root := t.TempDir()
	t.Setenv("PATH", t.TempDir()) // no bwrap there
	for _, mode := range []string{tools.SandboxRequired, tools.SandboxBubblewrap} {
		_, err := tools.NewBash(tools.BashConfig{Root: root, Shell: "/bin/sh", Sandbox: mode})
		if !errors.Is(err, tools.ErrInvalidConfig) || !strings.Contains(err.Error(), "bubblewrap is not installed") {
			t.Errorf("sandbox %s without bwrap: %v; want ErrInvalidConfig saying bubblewrap is not installed", mode, err)
		}
	}
	if _, err := tools.NewBash(tools.BashConfig{Root: root, Shell: "/bin/sh", Sandbox: "firejail"}); !errors.Is(err, tools.ErrInvalidConfig) || !strings.Contains(err.Error(), `"firejail"`) {
		t.Errorf("an unknown sandbox: %v", err)
	}
	if _, err := tools.NewBash(tools.BashConfig{Root: root, Shell: "/bin/sh", SandboxNetwork: true}); !errors.Is(err, tools.ErrInvalidConfig) {
		t.Errorf("network without a sandbox: %v", err)
	}
	if _, err := tools.NewBash(tools.BashConfig{Root: root, Shell: "/bin/sh", Sandbox: tools.SandboxNone}); err != nil {
		t.Errorf("sandbox none without bwrap: %v", err)
	}
}

// A bubblewrap that cannot make its namespaces here (a container without
// user namespaces) fails the trial run when the tool is built: the error
// carries its message and says what to do.
func TestSandboxThatDoesNotWorkIsRefusedAtStart(t *testing.T) {
	skipUnlessUnix(t)
	dir := t.TempDir()
	fake := "#!/bin/sh\n[ \"$1\" = --help ] && echo '    --disable-userns' && exit 0\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "bwrap"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	_, err := tools.NewBash(tools.BashConfig{Root: t.TempDir(), Sandbox: tools.SandboxRequired})
	if !errors.Is(err, tools.ErrInvalidConfig) {
		t.Fatalf("NewBash with a failing bwrap = %v; want ErrInvalidConfig", err)
	}
	for _, want := range []string{"the sandbox does not work here", "No permissions to creating new namespace", "user namespaces", "sandbox: none"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

// A bubblewrap too old to forbid user namespaces inside the sandbox
// (before 0.8.0, no --disable-userns) is refused for a worker running as
// root, saying why; another user's commands run in it.
func TestSandboxTooOldForRoot(t *testing.T) {
	skipUnlessUnix(t)
	dir := t.TempDir()
	fake := "#!/bin/sh\n[ \"$1\" = --help ] && echo 'usage: bwrap [OPTIONS...] [--] COMMAND [ARGS...]' && exit 0\nexit 0\n"
	if err := os.WriteFile(filepath.Join(dir, "bwrap"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	_, err := tools.NewBash(tools.BashConfig{Root: t.TempDir(), Sandbox: tools.SandboxBubblewrap})
	if os.Geteuid() != 0 {
		if err != nil {
			t.Fatalf("NewBash as uid %d with a bubblewrap without --disable-userns: %v", os.Geteuid(), err)
		}
		return
	}
	if !errors.Is(err, tools.ErrInvalidConfig) || !strings.Contains(err.Error(), "runs as root") || !strings.Contains(err.Error(), "--disable-userns") {
		t.Fatalf("NewBash as root with a bubblewrap without --disable-userns = %v; want ErrInvalidConfig saying why", err)
	}
}
