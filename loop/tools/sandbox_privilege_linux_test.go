//go:build linux

package tools_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hookbus/hookbus/loop/tools"
)

// unprivilegedUID is the user the sandbox tests run as a second time when
// the tests run as root ("nobody" on most systems).
const unprivilegedUID = 65534

// A sandboxed command takes none of the worker's privilege, whoever the
// worker is (root included): no capability, a uid other than 0, the
// kernel's settings read-only, no mount, no new namespace of any kind, and
// nothing outside the root changed. TestSandboxAsAnUnprivilegedUser runs it
// again as another user when the tests run as root.
func TestSandboxTakesNoPrivilege(t *testing.T) {
	b, root, outside := sandboxedBash(t, false)
	t.Logf("worker uid %d", os.Geteuid())

	got, err := call(t, b, obj{"command": "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(got, "\n") {
		if f := strings.Fields(l); len(f) != 2 || f[1] != "0000000000000000" {
			t.Errorf("capabilities in the sandbox: %q; want none", l)
		}
	}
	if got, err := call(t, b, obj{"command": "id -u"}); err != nil || got == "0" {
		t.Errorf("uid in the sandbox = %q, %v; want one other than 0", got, err)
	}

	// The kernel's settings: writing core_pattern (its own value back, so
	// that a sandbox that lets it through changes nothing) fails.
	const corePattern = "/proc/sys/kernel/core_pattern"
	before, err := os.ReadFile(corePattern)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := call(t, b, obj{"command": "cat " + corePattern + " > " + corePattern}); !errors.Is(err, tools.ErrExitStatus) {
		t.Errorf("writing %s = %q, %v; want it to fail", corePattern, got, err)
	}
	if after, err := os.ReadFile(corePattern); err != nil || !bytes.Equal(before, after) {
		t.Errorf("%s after the sandbox: %q, %v; before: %q", corePattern, after, err, before)
	}

	// No mount, no namespace of its own (a user namespace would give the
	// command every capability inside it).
	for _, tool := range []string{"mount", "unshare"} {
		if _, err := call(t, b, obj{"command": "command -v " + tool}); err != nil {
			t.Fatalf("%s is not in the sandbox (util-linux): %v", tool, err)
		}
	}
	for _, cmd := range []string{
		"mkdir -p /tmp/x && mount -t tmpfs none /tmp/x",
		"unshare -r true",
		"unshare -U true",
		"unshare -m true",
		"unshare -n true",
		"unshare -p -f true",
	} {
		if got, err := call(t, b, obj{"command": cmd}); !errors.Is(err, tools.ErrExitStatus) {
			t.Errorf("%s = %q, %v; want it to fail", cmd, got, err)
		}
	}

	// Outside the root nothing changes, even a file the worker owns; inside
	// it, writing works.
	secret := filepath.Join(outside, "secret")
	for _, cmd := range []string{"echo pwned > " + secret, "chmod 777 " + secret, "rm " + secret} {
		if got, err := call(t, b, obj{"command": cmd}); !errors.Is(err, tools.ErrExitStatus) {
			t.Errorf("%s = %q, %v; want it to fail", cmd, got, err)
		}
	}
	if fi, err := os.Stat(secret); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("%s after the sandbox: %v, %v", secret, fi, err)
	} else if b, _ := os.ReadFile(secret); string(b) != "top secret\n" {
		t.Errorf("%s after the sandbox: %q", secret, b)
	}
	if got, err := call(t, b, obj{"command": "echo made > made && cat made"}); err != nil || got != "made" {
		t.Errorf("writing in the root = %q, %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "made")); err != nil || string(b) != "made\n" {
		t.Errorf("the file made in the root: %q, %v", b, err)
	}
}

// Run as root, the sandbox tests run a second time as an unprivileged user
// (uid 65534): the test binary, copied where that user can run it, with
// only the TestSandbox tests. A sandbox that cannot work for that user (no
// unprivileged user namespaces here) skips them, saying so.
func TestSandboxAsAnUnprivilegedUser(t *testing.T) {
	if os.Getenv("HOOKBUS_SANDBOX_TEST_CHILD") != "" {
		t.Skip("this is the run as the unprivileged user")
	}
	if os.Geteuid() != 0 {
		t.Skipf("the tests run as uid %d, not root: the sandbox tests above ran as this unprivileged user", os.Geteuid())
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed: the sandbox tests need it (make sandbox installs it)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "tools.test")
	copyFile(t, self, bin)
	var out bytes.Buffer
	cmd := exec.Command(bin, "-test.run", "^TestSandbox", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/", "TMPDIR=" + os.TempDir(), "HOOKBUS_SANDBOX_TEST_CHILD=1"}
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID, Groups: []uint32{}}}
	err = cmd.Run()
	t.Logf("the sandbox tests as uid %d:\n%s", unprivilegedUID, out.String())
	if err != nil {
		t.Fatalf("the sandbox tests as uid %d: %v", unprivilegedUID, err)
	}
	if strings.Contains(out.String(), "--- SKIP: TestSandboxTakesNoPrivilege") {
		t.Skipf("the sandbox does not work for uid %d here, its tests skipped (see above)", unprivilegedUID)
	}
	if !strings.Contains(out.String(), "--- PASS: TestSandboxTakesNoPrivilege") {
		t.Fatalf("the run as uid %d did not pass TestSandboxTakesNoPrivilege", unprivilegedUID)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(fmt.Errorf("copying the test binary: %w", err))
	}
}
