//go:build linux

package main

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeDNS answers A and AAAA queries on UDP from records (a name with its
// final dot, lower case), NXDOMAIN for any other name, and records the
// names asked for.
func fakeDNS(t *testing.T, records map[string][]netip.Addr) (netip.AddrPort, func() []string) {
	return fakeDNSDropping(t, records, 0)
}

// fakeDNSDropping is fakeDNS answering no query of type drop.
func fakeDNSDropping(t *testing.T, records map[string][]netip.Addr, drop uint16) (netip.AddrPort, func() []string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	asked := make(chan string, 64)
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			end, ok := skipName(q, 12)
			if !ok || end+4 > len(q) {
				continue
			}
			var labels []string
			for i := 12; q[i] != 0; i += 1 + int(q[i]) {
				labels = append(labels, string(q[i+1:i+1+int(q[i])]))
			}
			name := strings.ToLower(strings.Join(labels, ".") + ".")
			t4 := uint16(q[end])<<8 | uint16(q[end+1])
			asked <- name
			if t4 == drop {
				continue
			}
			resp := append([]byte(nil), q[:end+4]...)
			resp[2] |= 0x80
			addrs, known := records[name]
			if !known {
				resp[3] |= dnsNXDomain
			}
			an := 0
			for _, a := range addrs {
				var rdata []byte
				switch {
				case a.Is4() && t4 == dnsTypeA:
					b := a.As4()
					rdata = b[:]
				case a.Is6() && t4 == dnsTypeAAAA:
					b := a.As16()
					rdata = b[:]
				default:
					continue
				}
				// A CNAME first would be chained the same way: the
				// answer's name is a pointer to the question's.
				resp = append(resp, 0xc0, 12, byte(t4>>8), byte(t4), 0, 1, 0, 0, 0, 60, 0, byte(len(rdata)))
				resp = append(resp, rdata...)
				an++
			}
			resp[6], resp[7] = 0, byte(an)
			_, _ = pc.WriteTo(resp, from)
		}
	}()
	addr := netip.MustParseAddrPort(pc.LocalAddr().String())
	return addr, func() []string {
		var out []string
		for {
			select {
			case n := <-asked:
				out = append(out, n)
			default:
				return out
			}
		}
	}
}

// A host name is looked up as a static Go program looks it up: the hosts
// file first, then DNS (A before AAAA) through the search list in
// resolv.conf's order, localhost as the loopback addresses when neither
// names it; a name nobody knows is "no such host".
func TestLookup(t *testing.T) {
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("# a comment\n10.0.0.9 gw.hosts gw-alias # trailing\nfe80::1%eth0 zoned\n::2 gw.hosts\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	server, asked := fakeDNS(t, map[string][]netip.Addr{
		"gw.corp.example.": {netip.MustParseAddr("::3"), netip.MustParseAddr("10.0.0.3")},
		"gw.dotted.":       {netip.MustParseAddr("10.0.0.4")},
	})
	conf := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(conf, []byte("search corp.example other.example\noptions ndots:1 timeout:1 attempts:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := readResolvConf(conf)
	if !slices.Equal(c.search, []string{"corp.example", "other.example"}) || c.ndots != 1 || c.timeout != time.Second || c.attempts != 1 {
		t.Fatalf("resolv.conf read as %+v", c)
	}
	c.servers = []netip.AddrPort{server}
	r := &resolver{hosts: hosts, conf: c}
	deadline := time.Now().Add(10 * time.Second)
	for _, tc := range []struct {
		name  string
		want  []string
		asked []string
	}{
		{"GW.hosts", []string{"10.0.0.9", "::2"}, nil},
		{"gw-alias.", []string{"10.0.0.9"}, nil},
		{"gw", []string{"10.0.0.3", "::3"}, []string{"gw.corp.example."}},
		{"gw.dotted", []string{"10.0.0.4"}, []string{"gw.dotted."}},
		{"localhost", []string{"127.0.0.1", "::1"}, []string{"localhost.corp.example.", "localhost.other.example.", "localhost."}},
	} {
		got, err := r.lookup(tc.name, deadline)
		var s []string
		for _, ip := range got {
			s = append(s, ip.String())
		}
		if err != nil || !slices.Equal(s, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, s, err, tc.want)
		}
		if a := slices.Compact(asked()); !slices.Equal(a, tc.asked) {
			t.Errorf("%s: asked the server for %v, want %v", tc.name, a, tc.asked)
		}
	}
	if _, err := r.lookup("nowhere", deadline); err == nil || err.Error() != "lookup nowhere: no such host" {
		t.Errorf("an unknown name: %v", err)
	}

	// A server that drops the AAAA question: the A answer, once the time
	// given to the query has passed.
	dropping, _ := fakeDNSDropping(t, map[string][]netip.Addr{"gw.corp.example.": {netip.MustParseAddr("10.0.0.3")}}, dnsTypeAAAA)
	r.conf.servers, r.conf.timeout = []netip.AddrPort{dropping}, 100*time.Millisecond
	if got, err := r.lookup("gw", deadline); err != nil || len(got) != 1 || got[0].String() != "10.0.0.3" {
		t.Errorf("a server that drops AAAA: %v %v", got, err)
	}

	// A server that does not answer: the time it is given, then its error.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	r.conf.servers = []netip.AddrPort{netip.MustParseAddrPort(pc.LocalAddr().String())}
	if _, err := r.lookup("gw", time.Now().Add(100*time.Millisecond)); err == nil || !strings.Contains(err.Error(), "i/o timeout") {
		t.Errorf("a silent server: %v", err)
	}
}

// A name's addresses are tried in turn until one takes the connection;
// a refused connection is worded as package net words it.
func TestDialFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	// Nothing listens on 127.0.0.2 (loopback too) at that port.
	ips := []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.1")}
	c, err := dialFirst(ips, port, time.Now().Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := dial("127.0.0.1:1", time.Now().Add(5*time.Second)); err == nil || err.Error() != "dial tcp 127.0.0.1:1: connect: connection refused" {
		t.Errorf("a refused connection: %v", err)
	}
}
