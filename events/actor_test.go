package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
)

func TestWriterToken(t *testing.T) {
	for _, tc := range []struct{ user, token string }{
		{"approver", "approver"},
		{"alice@example.com", "alice@example%2Ecom"},
		{"CN=bob, O=acme", "CN=bob%2C%20O=acme"},
		{"UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4", "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"},
		{"a*b>c%d", "a%2Ab%3Ec%25d"},
	} {
		tok, err := events.WriterToken(tc.user)
		if err != nil || tok != tc.token {
			t.Errorf("WriterToken(%q) = %q, %v; want %q", tc.user, tok, err, tc.token)
			continue
		}
		if err := events.ValidateID("token", tok); err != nil {
			t.Errorf("token %q is not a subject token: %v", tok, err)
		}
		if back, err := events.ParseWriterToken(tok); err != nil || back != tc.user {
			t.Errorf("ParseWriterToken(%q) = %q, %v", tok, back, err)
		}
	}
	if _, err := events.WriterToken(""); !errors.Is(err, events.ErrInvalidID) {
		t.Errorf("empty writer: %v", err)
	}
	if _, err := events.WriterToken(strings.Repeat(".", 100)); !errors.Is(err, events.ErrInvalidID) {
		t.Errorf("a writer too long once encoded: %v", err)
	}
	// Only WriterToken's own form parses: one user, one token.
	for _, bad := range []string{"", "a%2e", "a%41", "a%4", "a b", "a.b", "a%", "%ZZ"} {
		if u, err := events.ParseWriterToken(bad); !errors.Is(err, events.ErrInvalidSubject) {
			t.Errorf("ParseWriterToken(%q) = %q, %v; want ErrInvalidSubject", bad, u, err)
		}
	}
}

func FuzzWriterToken(f *testing.F) {
	for _, s := range []string{"approver", "alice@example.com", "a.b*c>d e%f", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, user string) {
		tok, err := events.WriterToken(user)
		if err != nil {
			return
		}
		if err := events.ValidateID("token", tok); err != nil && len(tok) <= events.MaxIDLen {
			t.Fatalf("token %q of %q is not a subject token: %v", tok, user, err)
		}
		if back, err := events.ParseWriterToken(tok); err != nil || back != user {
			t.Fatalf("round trip of %q: %q, %v", user, back, err)
		}
	})
}

func TestApprovalResolvedSubject(t *testing.T) {
	var s events.Subjects
	subj, err := s.ApprovalResolved("ops", "s1", "alice@example.com")
	if err != nil || subj != "hookbus.evt.ops.s1.approval.resolved.alice@example%2Ecom" {
		t.Fatalf("ApprovalResolved = %q, %v", subj, err)
	}
	agent, session, stage, writer, err := s.ParseEventWriter(subj)
	if err != nil || agent != "ops" || session != "s1" || stage != events.StageApprovalResolved || writer != "alice@example.com" {
		t.Fatalf("ParseEventWriter = %s %s %s %q %v", agent, session, stage, writer, err)
	}
	if _, _, stage, writer, err := s.ParseEventWriter("hookbus.evt.ops.s1.approval.resolved"); err != nil || stage != events.StageApprovalResolved || writer != "" {
		t.Fatalf("the plain subject: %s %q %v", stage, writer, err)
	}
	for _, bad := range []string{"hookbus.evt.ops.s1.tool.after.alice", "hookbus.evt.ops.s1.approval.resolved.a.b", "hookbus.evt.ops.s1.approval.resolved.a%2e"} {
		if _, _, _, _, err := s.ParseEventWriter(bad); !errors.Is(err, events.ErrInvalidSubject) {
			t.Errorf("ParseEventWriter(%q) = %v, want ErrInvalidSubject", bad, err)
		}
	}
	f, err := s.EventFilters("", "", events.StageApprovalResolved)
	if err != nil || len(f) != 2 || f[0] != "hookbus.evt.*.*.approval.resolved" || f[1] != "hookbus.evt.*.*.approval.resolved.*" {
		t.Fatalf("EventFilters = %v, %v", f, err)
	}
	if f, _ := s.EventFilters("ops", "", events.StageToolAfter); len(f) != 1 {
		t.Fatalf("EventFilters of tool.after = %v", f)
	}
}

func TestActorCheckWriter(t *testing.T) {
	person := events.Actor{Identity: "alice", Writer: "alice", Channel: events.ChannelCLI}
	web := events.Actor{Identity: "bob@example.com", Via: "proxy", Writer: "webui", Channel: events.ChannelWeb}
	expiry := events.Actor{Identity: events.IdentityHookbus, Channel: events.ChannelExpiry}
	for _, tc := range []struct {
		a      events.Actor
		writer string
		bad    string // what the error says; "" when it binds
	}{
		{person, "alice", ""},
		{web, "webui", ""},
		{expiry, "", ""},
		{events.Actor{}, "", ""}, // a record from before identities: claims none
		{person, "mallory", `names writer "alice" but was written by NATS user "mallory"`},
		{events.Actor{Identity: "the-ciso", Writer: "approver", Channel: events.ChannelCLI}, "approver", `claims identity "the-ciso"`},
		{person, "", "is on the plain subject"},
		{expiry, "approver", "an expiry written by NATS user"},
		{events.Actor{Identity: "alice", Channel: events.ChannelExpiry}, "", `an expiry by "alice"`},
	} {
		err := tc.a.CheckWriter(tc.writer)
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%+v on %q: %v, want %q", tc.a, tc.writer, err, tc.bad)
		}
	}
	if s := web.String(); s != "bob@example.com (web, vouched for by NATS user webui)" {
		t.Errorf("String = %q", s)
	}
}
