package redact

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://loop:s3cret-pass@127.0.0.1:1", "nats://loop:xxxxx@127.0.0.1:1"},
		{"nats://tok3n-value@host:4222", "nats://xxxxx@host:4222"},
		{"tls://a:b%40c@h1:4222,nats://a:pw2x@h2:4222", "tls://a:xxxxx@h1:4222,nats://a:xxxxx@h2:4222"},
		{"nats://h1:4222, nats://u:pw3x@h2", "nats://h1:4222, nats://u:xxxxx@h2"},
		{"nats://us er:p w@host", "nats://xxxxx@host"},         // not a URL: user info masked anyway
		{"nats://u:p%zzsecret@host", "nats://xxxxx@host"},      // a bad escape
		{"user:secret@host:4222", "xxxxx@host:4222"},           // no scheme
		{"nats://u:a@b@host:4222", "nats://u:xxxxx@host:4222"}, // '@' inside the password
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestUserInfo(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"nats://127.0.0.1:4222", nil},
		{"nats://loop:s3cret@h", []string{"s3cret"}},
		{"nats://t0ken@h", []string{"t0ken"}},
		{"nats://a:b%40c@h1,nats://t2@h2", []string{"b@c", "t2"}},
		{"nats://us er:p w@host", []string{"us er:p w", "p w"}},
	} {
		if got := UserInfo(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("UserInfo(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSecrets(t *testing.T) {
	env := map[string]string{"NATS_URL": "nats://u:envpass@h", "NATS_PASSWORD": "envpw2", "NATS_TOKEN": "envtok", "HOOKBUS_GATEWAY_TOKEN": "gwtok-0123456789abcdef"}
	args := []string{"run", "--nats", "nats://u:flagpass@h", "-password=pw-flag", "--token", "tok-flag", "--session", "s1", "--nats"}
	got := Secrets(args, func(k string) string { return env[k] })
	want := []string{"envpass", "envpw2", "envtok", "gwtok-0123456789abcdef", "flagpass", "pw-flag", "tok-flag"}
	if !slices.Equal(got, want) {
		t.Fatalf("Secrets = %q, want %q", got, want)
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, "s3cret", "p@ss word", "ab", "s3cret")
	fmt.Fprintf(w, "connect nats://u:s3cret@h: refused; raw p@ss word, escaped p%%40ss%%20word and p%%40ss+word; short ab stays\n")
	want := "connect nats://u:xxxxx@h: refused; raw xxxxx, escaped xxxxx and xxxxx; short ab stays\n"
	if b.String() != want {
		t.Fatalf("got  %q\nwant %q", b.String(), want)
	}
	var plain bytes.Buffer
	n, err := NewWriter(&plain).Write([]byte("as is"))
	if n != 5 || err != nil || plain.String() != "as is" {
		t.Fatalf("no secrets: %d %v %q", n, err, plain.String())
	}
}

func TestError(t *testing.T) {
	base := fmt.Errorf("parse %q: invalid URL escape", "nats://u:p%zzsecret@h")
	err := Error(base, UserInfo("nats://u:p%zzsecret@h")...)
	if got := err.Error(); got != `parse "nats://xxxxx@h": invalid URL escape` {
		t.Fatalf("Error() = %q", got)
	}
	if !errors.Is(err, base) || Error(nil) != nil {
		t.Fatal("Error does not wrap")
	}
}
