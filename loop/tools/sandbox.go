package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Sandbox modes of the Bash tool (BashConfig.Sandbox). The file tools need
// none: os.Root confines them.
const (
	// SandboxNone runs commands as the worker's user, unconfined: only
	// their working directory is the root. The default.
	SandboxNone = "none"
	// SandboxBubblewrap runs each command under bubblewrap (bwrap), which
	// must be installed and work here: NewBash refuses to build the tool
	// otherwise.
	SandboxBubblewrap = "bubblewrap"
	// SandboxRequired runs each command under the sandbox this system has,
	// and refuses to build the tool without one. On Linux that is
	// bubblewrap; no other system has one yet.
	SandboxRequired = "required"
)

// SandboxModes lists the values BashConfig.Sandbox takes ("" is
// SandboxNone).
func SandboxModes() []string { return []string{SandboxNone, SandboxBubblewrap, SandboxRequired} }

// sandboxTrial bounds the trial run NewBash makes of a sandbox.
const sandboxTrial = 10 * time.Second

// sandboxHome is HOME and TMPDIR inside the sandbox: its private /tmp.
const sandboxHome = "/tmp"

// systemDirs are bound read-only into the sandbox when they exist (a
// symlink, as /bin -> usr/bin on merged-/usr systems, is made again).
var systemDirs = [...]string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the parts of /etc bound read-only into the sandbox, when they
// exist: what the dynamic loader, a shell and common tools read, users and
// groups, name resolution and TLS roots (for sandbox_network), time zone
// and locale. Nothing else of /etc (no /etc/shadow, no credentials) is
// visible.
var etcFiles = [...]string{
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives",
	"passwd", "group", "nsswitch.conf",
	"hosts", "host.conf", "resolv.conf", "gai.conf", "protocols", "services",
	"ssl", "ca-certificates", "ca-certificates.conf", "pki", "crypto-policies",
	"localtime", "timezone", "locale.alias", "locale.conf", "default/locale",
	"os-release", "debian_version", "lsb-release", "mime.types",
	"bash.bashrc", "profile", "inputrc",
}

// procCovered are the parts of the sandbox's /proc bound read-only over
// themselves, when they exist: the kernel's settings (/proc/sys: core_pattern,
// modprobe, ...), the SysRq trigger and the interfaces to hardware, which
// check the writer's uid but not its capabilities.
var procCovered = [...]string{"sys", "sysrq-trigger", "irq", "bus", "fs", "acpi", "scsi", "asound"}

// sandboxUser is the uid and gid a root worker's commands have in the
// sandbox's user namespace ("nobody" on most systems).
const sandboxUser = "65534"

// sandbox is a configured bubblewrap: the program and its arguments before
// the command.
type sandbox struct {
	bwrap string
	args  []string
}

// newSandbox returns the sandbox of mode for commands run in root, or nil
// for SandboxNone. It returns an error wrapping ErrInvalidConfig when the mode is
// unknown, or bubblewrap is missing; the trial run is NewBash's.
func newSandbox(mode, root string, network bool) (*sandbox, error) {
	switch mode {
	case "", SandboxNone:
		if network {
			return nil, fmt.Errorf("%w: Bash: sandbox_network is set without a sandbox (sandbox: %s or %s)", ErrInvalidConfig, SandboxBubblewrap, SandboxRequired)
		}
		return nil, nil
	case SandboxBubblewrap, SandboxRequired:
	default:
		return nil, fmt.Errorf("%w: Bash: unknown sandbox %q (known: %s)", ErrInvalidConfig, mode, strings.Join(SandboxModes(), ", "))
	}
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("%w: Bash: sandbox %s: there is no sandbox for %s (bubblewrap runs on Linux only); use sandbox: %s, or run the worker on Linux",
			ErrInvalidConfig, mode, runtime.GOOS, SandboxNone)
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: Bash: sandbox %s: bubblewrap is not installed (no bwrap in PATH): install it (Debian and Ubuntu: apt-get install bubblewrap; make sandbox does), or use sandbox: %s to run commands unconfined",
			ErrInvalidConfig, mode, SandboxNone)
	}
	if root == "/" {
		return nil, fmt.Errorf("%w: Bash: sandbox %s: the root is /, so the sandbox would confine nothing", ErrInvalidConfig, mode)
	}
	noUserns, err := bwrapDisablesUserns(bwrap)
	if err != nil {
		return nil, fmt.Errorf("%w: Bash: sandbox %s: %s --help: %v", ErrInvalidConfig, mode, bwrap, err)
	}
	asRoot := os.Geteuid() == 0
	if asRoot && !noUserns {
		return nil, fmt.Errorf("%w: Bash: sandbox %s: the worker runs as root and this bubblewrap (%s) cannot keep its commands from making user namespaces of their own (--disable-userns, bubblewrap 0.8.0 or later): upgrade bubblewrap, run the worker as a user other than root, or use sandbox: %s",
			ErrInvalidConfig, mode, bwrap, SandboxNone)
	}
	return &sandbox{bwrap: bwrap, args: bwrapArgs(root, network, asRoot, noUserns)}, nil
}

// bwrapDisablesUserns reports whether bwrap knows --disable-userns
// (bubblewrap 0.8.0 and later), from its usage text.
func bwrapDisablesUserns(bwrap string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sandboxTrial)
	defer cancel()
	out, err := exec.CommandContext(ctx, bwrap, "--help").CombinedOutput()
	if err != nil && len(out) == 0 {
		return false, err
	}
	return bytes.Contains(out, []byte("--disable-userns")), nil
}

// bwrapArgs builds bubblewrap's arguments: a read-only file system of the
// system directories and parts of /etc, the root read-write at its own path
// (the working directory), a private /tmp, a new /proc (its kernel settings
// read-only) and a minimal /dev, nothing else; every namespace new (the
// network too unless network), a user namespace always, with no capability
// in it and, with noUserns, no way to make another; for a worker running as
// root (asRoot), uid and gid 65534 inside; the sandbox ending with the
// worker and in a session of its own. See docs/SECURITY.md.
func bwrapArgs(root string, network, asRoot, noUserns bool) []string {
	a := []string{"--die-with-parent", "--new-session", "--unshare-all", "--unshare-user", "--cap-drop", "ALL"}
	if noUserns {
		a = append(a, "--disable-userns")
	}
	if asRoot {
		a = append(a, "--uid", sandboxUser, "--gid", sandboxUser)
	}
	if network {
		a = append(a, "--share-net")
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		p := filepath.Join("/etc", f)
		if _, err := os.Stat(p); err == nil {
			a = append(a, "--ro-bind", p, p)
		}
	}
	a = append(a, "--proc", "/proc")
	for _, f := range procCovered {
		p := filepath.Join("/proc", f)
		if _, err := os.Lstat(p); err == nil {
			a = append(a, "--ro-bind", p, p)
		}
	}
	a = append(a,
		"--dev", "/dev", "--tmpfs", "/tmp",
		"--bind", root, root, "--chdir", root,
		"--remount-ro", "/",
		"--",
	)
	return a
}

// command returns the command running shell -c script in the sandbox.
func (s *sandbox) command(shell, script string) *exec.Cmd {
	args := append(append([]string(nil), s.args...), shell, "-c", script)
	return exec.Command(s.bwrap, args...)
}

// env adapts a command's environment to the sandbox: HOME and TMPDIR are
// its private /tmp (the worker's home is not there).
func (s *sandbox) env(env []string) []string {
	out := make([]string, 0, len(env)+2)
	for _, e := range env {
		if !strings.HasPrefix(e, "HOME=") && !strings.HasPrefix(e, "TMPDIR=") {
			out = append(out, e)
		}
	}
	return append(out, "HOME="+sandboxHome, "TMPDIR="+sandboxHome)
}

// trial runs shell -c true in the sandbox once, so that a sandbox that
// cannot work here (no user namespaces for this user, a shell outside the
// system directories) is an error when the tool is built, not at its first
// command. The error wraps ErrInvalidConfig and carries bubblewrap's message.
func (s *sandbox) trial(shell string, env []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), sandboxTrial)
	defer cancel()
	cmd := s.command(shell, "true")
	cmd.Env = s.env(env)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: Bash: the sandbox (%s) does not start: %v", ErrInvalidConfig, s.bwrap, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		err = fmt.Errorf("no answer within %v", sandboxTrial)
	}
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(out.String())
	hint := ""
	if strings.Contains(msg, "namespace") || strings.Contains(msg, "Operation not permitted") || strings.Contains(msg, "setting up uid map") {
		hint = "; bubblewrap needs user namespaces, which this system or container does not allow this user (kernel.unprivileged_userns_clone, user.max_user_namespaces, a container's seccomp profile): allow them, run the worker as root, or use sandbox: " + SandboxNone
	}
	if strings.Contains(msg, "No such file") || strings.Contains(msg, "execvp") {
		hint = fmt.Sprintf("; the shell %s must be under a system directory (%s)", shell, strings.Join(systemDirs[:], ", "))
	}
	return fmt.Errorf("%w: Bash: the sandbox does not work here: %s -c true under %s: %v: %s%s", ErrInvalidConfig, shell, s.bwrap, err, msg, hint)
}
