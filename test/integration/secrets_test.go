package integration

import (
	"strings"
	"testing"
	"time"
)

// No command prints a password or token it was given, whichever way it was
// given and whatever went wrong: the whole output of every command is
// searched for the secret.
func TestCredentialsNeverPrinted(t *testing.T) {
	const secret = "s3cret-Pa55w0rd"
	down := freeAddr(t) // nothing listens there: every command fails to connect
	commands := [][]string{
		{"loop", "run", "-v", "hi"},
		{"loop", "serve", "-v"},
		{"loop", "submit", "-v", "hi"},
		{"observer", "replay", "-v"},
		{"observer", "tail", "-v"},
		{"observer", "provision", "-v"},
		{"observer", "hooks", "list", "-v"},
		{"observer", "hooks", "add", "-v", "--stage", "tool.before", "--plugin", "p"},
		{"observer", "hooks", "rm", "-v", "--stage", "tool.before", "--plugin", "p"},
		{"observer", "hooks", "grant", "-v", "p"},
		{"observer", "hooks", "revoke", "-v", "p"},
	}
	ways := []struct {
		name string
		args []string
		env  []string
	}{
		{"user info in --nats", []string{"--nats", "nats://loop:" + secret + "@" + down}, nil},
		{"a token in --nats", []string{"--nats", "nats://" + secret + "@" + down}, nil},
		{"several URLs", []string{"--nats", "nats://" + down + ",nats://loop:" + secret + "@" + down}, nil},
		{"a URL that does not parse", []string{"--nats", "nats://loop:" + secret + "%zz@" + down}, nil},
		{"user info in $NATS_URL", nil, []string{"NATS_URL=nats://loop:" + secret + "@" + down}},
		{"--user and --password", []string{"--nats", "nats://" + down, "--user", "loop", "--password", secret}, nil},
		{"--password=", []string{"--nats", "nats://" + down, "--user", "loop", "--password=" + secret}, nil},
		{"$NATS_USER and $NATS_PASSWORD", []string{"--nats", "nats://" + down}, []string{"NATS_USER=loop", "NATS_PASSWORD=" + secret}},
		{"--token", []string{"--nats", "nats://" + down, "--token", secret}, nil},
		{"$NATS_TOKEN with $NATS_URL", nil, []string{"NATS_URL=nats://" + down, "NATS_TOKEN=" + secret}},
	}
	for _, way := range ways {
		for _, c := range commands {
			args := append(append([]string{}, c[1:]...), way.args...)
			r := runWith(t, runOpts{env: way.env}, c[0], args...)
			out := r.stdout + r.stderr
			if strings.Contains(out, secret) || strings.Contains(out, "Pa55w0rd") {
				t.Errorf("%s, %s: the secret is printed:\n%s", way.name, strings.Join(c, " "), out)
			}
			if r.code == 0 || r.stderr == "" {
				t.Errorf("%s, %s: exit %d, stderr %q: want a failure saying why", way.name, strings.Join(c, " "), r.code, r.stderr)
			}
		}
	}
}

// The same on a server that requires the credentials: a worker says where
// it is connected without the password, a wrong password is named as such
// without itself, and the user/password flags and variables work.
func TestCredentialsOnAnAuthenticatedServer(t *testing.T) {
	url := deployConf(t)
	admin, loopUser := url("admin", "admin-change-me"), url("loop", "loop-change-me")
	addr := strings.SplitN(admin, "@", 2)[1]
	if p := run(t, "observer", "provision", "--nats", "nats://"+addr, "--user", "admin", "--password", "admin-change-me"); p.code != 0 || strings.Contains(p.stdout+p.stderr, "admin-change-me") {
		t.Fatalf("provision with --user/--password: %d %s %s", p.code, p.stdout, p.stderr)
	}

	_, out := start(t, "loop", "serve", "-v", "--nats", loopUser)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "taking runs") }, "loop serve: %s", out)
	if !strings.Contains(out.String(), "nats://loop:xxxxx@") || strings.Contains(out.String(), "loop-change-me") {
		t.Fatalf("loop serve shows where it is connected with the password:\n%s", out)
	}

	r := runWith(t, runOpts{env: []string{"NATS_URL=nats://" + addr, "NATS_USER=loop", "NATS_PASSWORD=loop-change-me"}}, "loop", "submit", "--wait", "what is 6*7?")
	if r.code != 0 || !strings.Contains(r.stdout, "6*7 = 42") || strings.Contains(r.stdout+r.stderr, "loop-change-me") {
		t.Fatalf("submit with $NATS_USER/$NATS_PASSWORD: %d %s %s", r.code, r.stdout, r.stderr)
	}

	bad := run(t, "observer", "replay", "--nats", url("auditor", "wr0ng-Secret"))
	if bad.code != 1 || !strings.Contains(bad.stderr, "Authorization Violation") || strings.Contains(bad.stderr, "wr0ng-Secret") {
		t.Fatalf("a wrong password: %d %q", bad.code, bad.stderr)
	}
}
