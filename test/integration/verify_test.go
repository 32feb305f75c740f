package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSignedRunsVerify: loop keygen makes a key, loop run signs its runs
// with it, observer verify checks them against the public key (fails them
// against another key, and without a key passes them, saying the key was
// not given), offline on the store the runs left.
func TestSignedRunsVerify(t *testing.T) {
	dir := t.TempDir()
	keygen := runWith(t, runOpts{dir: dir}, "loop", "keygen", "--out", "sign.nk")
	pub := strings.TrimSpace(keygen.stdout)
	if keygen.code != 0 || !strings.HasPrefix(pub, "A") {
		t.Fatalf("keygen: %d %q %s", keygen.code, keygen.stdout, keygen.stderr)
	}
	if again := runWith(t, runOpts{dir: dir}, "loop", "keygen", "--out", "sign.nk"); again.code != 2 {
		t.Fatalf("keygen over an existing key: exit %d, want 2 (%s)", again.code, again.stderr)
	}
	for range 2 {
		run := runWith(t, runOpts{dir: dir}, "loop", "run", "--embedded", "--listen", "none", "--signing-key", "sign.nk", "What time is it?")
		if run.code != 0 {
			t.Fatalf("run: %d %s", run.code, run.stderr)
		}
	}
	store := filepath.Join(dir, ".hookbus")
	ok := runWith(t, runOpts{dir: dir}, "observer", "verify", "--store", store, "--public-key", pub)
	if ok.code != 0 || strings.Count(ok.stdout, "ok  ") != 2 || !strings.Contains(ok.stderr, "2 intact, 0 failed") {
		t.Fatalf("verify: %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
	untrusted := runWith(t, runOpts{dir: dir}, "observer", "verify", "--store", store)
	if untrusted.code != 0 || strings.Count(untrusted.stdout, "(a key not given with --public-key)") != 2 {
		t.Fatalf("verify without the key: %d\n%s%s", untrusted.code, untrusted.stdout, untrusted.stderr)
	}
	other := runWith(t, runOpts{dir: dir}, "loop", "keygen", "--out", "other.nk")
	wrong := runWith(t, runOpts{dir: dir}, "observer", "verify", "--store", store, "--public-key", strings.TrimSpace(other.stdout))
	if wrong.code != 1 || strings.Count(wrong.stdout, "unknown_signer") != 2 {
		t.Fatalf("verify with another key: %d\n%s%s", wrong.code, wrong.stdout, wrong.stderr)
	}
	if bad := runWith(t, runOpts{dir: dir}, "observer", "verify", "--store", store, "--public-key", "nope"); bad.code != 2 {
		t.Fatalf("a bad key: exit %d, want 2: %s", bad.code, bad.stderr)
	}
}

// TestUnsignedRunsVerify: a run recorded without a signing key passes
// observer verify (its record is intact, and the line says it is unsigned),
// and fails it with --require-signed.
func TestUnsignedRunsVerify(t *testing.T) {
	dir := t.TempDir()
	if run := runWith(t, runOpts{dir: dir}, "loop", "run", "--embedded", "--listen", "none", "What time is it?"); run.code != 0 {
		t.Fatalf("run: %d %s", run.code, run.stderr)
	}
	store := filepath.Join(dir, ".hookbus")
	ok := runWith(t, runOpts{dir: dir}, "observer", "verify", "--store", store)
	if ok.code != 0 || !strings.Contains(ok.stdout, "ok  ") || !strings.Contains(ok.stdout, "unsigned") || !strings.Contains(ok.stderr, "1 intact, 0 failed") {
		t.Fatalf("verify: %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
	required := runWith(t, runOpts{dir: dir}, "observer", "verify", "--store", store, "--require-signed")
	if required.code != 1 || !strings.Contains(required.stdout, "FAILED") || !strings.Contains(required.stdout, "unsigned") {
		t.Fatalf("verify --require-signed: %d\n%s%s", required.code, required.stdout, required.stderr)
	}
}
