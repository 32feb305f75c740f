//go:build linux

package main

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The gateway's host name, looked up without package net as a static Go
// program (CGO_ENABLED=0) looks it up by default: /etc/hosts first, then
// the name servers of /etc/resolv.conf (its search list, ndots, timeout
// and attempts), A and AAAA records over UDP; localhost is the loopback
// addresses when neither names it.

// Where the system keeps its names.
const (
	hostsPath      = "/etc/hosts"
	resolvConfPath = "/etc/resolv.conf"
)

// errNoSuchHost is a name that neither /etc/hosts nor DNS knows.
var errNoSuchHost = errors.New("no such host")

// lookup returns the addresses of name, before deadline.
func lookup(name string, deadline time.Time) ([]netip.Addr, error) {
	r := &resolver{hosts: hostsPath, conf: readResolvConf(resolvConfPath)}
	return r.lookup(name, deadline)
}

// resolver looks names up in a hosts file, then in DNS.
type resolver struct {
	hosts string // the hosts file's path
	conf  dnsConfig
}

// dnsConfig is what resolv.conf says.
type dnsConfig struct {
	servers  []netip.AddrPort
	search   []string // domains, without their final dot
	ndots    int
	timeout  time.Duration // of one query to one server
	attempts int
}

func (r *resolver) lookup(name string, deadline time.Time) ([]netip.Addr, error) {
	if ips := hostsLookup(r.hosts, name); len(ips) > 0 {
		return ips, nil
	}
	var lastErr error
	for _, fqdn := range r.conf.names(name) {
		ips, err := r.conf.query(fqdn, deadline)
		if len(ips) > 0 {
			return ips, nil
		}
		if err != nil {
			lastErr = err
		}
	}
	if n := strings.ToLower(strings.TrimSuffix(name, ".")); n == "localhost" || strings.HasSuffix(n, ".localhost") {
		return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}, nil
	}
	if lastErr != nil {
		return nil, errors.New("lookup " + name + ": " + lastErr.Error())
	}
	return nil, errors.New("lookup " + name + ": " + errNoSuchHost.Error())
}

// hostsLookup returns the addresses the hosts file at path gives name, in
// its order.
func hostsLookup(path, name string) []netip.Addr {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	name = strings.TrimSuffix(name, ".")
	var ips []netip.Addr
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		ip, err := netip.ParseAddr(f[0])
		if err != nil || ip.Zone() != "" {
			continue
		}
		for _, h := range f[1:] {
			if strings.EqualFold(strings.TrimSuffix(h, "."), name) {
				ips = append(ips, ip)
				break
			}
		}
	}
	return ips
}

// readResolvConf reads path as the system's resolver reads resolv.conf;
// what it does not say takes the defaults (the local name server, the
// host's domain as the search list, ndots 1, timeout 5 s, 2 attempts).
func readResolvConf(path string) dnsConfig {
	c := dnsConfig{ndots: 1, timeout: 5 * time.Second, attempts: 2}
	b, _ := os.ReadFile(path)
	searched := false
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 1 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 && len(c.servers) < 3 {
				if ip, err := netip.ParseAddr(f[1]); err == nil {
					c.servers = append(c.servers, netip.AddrPortFrom(ip, 53))
				}
			}
		case "domain":
			if len(f) > 1 {
				c.search, searched = []string{strings.TrimSuffix(f[1], ".")}, true
			}
		case "search":
			c.search, searched = nil, true
			for _, d := range f[1:] {
				if d = strings.TrimSuffix(d, "."); d != "" {
					c.search = append(c.search, d)
				}
			}
		case "options":
			for _, o := range f[1:] {
				k, v, _ := strings.Cut(o, ":")
				n, err := strconv.Atoi(v)
				switch {
				case err != nil || n < 0:
				case k == "ndots":
					c.ndots = min(n, 15)
				case k == "timeout":
					c.timeout = time.Duration(max(n, 1)) * time.Second
				case k == "attempts":
					c.attempts = min(max(n, 1), 5)
				}
			}
		}
	}
	if len(c.servers) == 0 {
		c.servers = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:53"), netip.MustParseAddrPort("[::1]:53")}
	}
	if !searched {
		if h, err := os.Hostname(); err == nil {
			if _, d, ok := strings.Cut(h, "."); ok && d != "" {
				c.search = []string{d}
			}
		}
	}
	return c
}

// names are the names to ask for, in order: a name with a final dot as
// it is; one with at least ndots dots as it is, then in each domain of
// the search list; another in each domain, then as it is.
func (c *dnsConfig) names(name string) []string {
	if strings.HasSuffix(name, ".") {
		return []string{name}
	}
	var out []string
	many := strings.Count(name, ".") >= c.ndots
	if many {
		out = append(out, name+".")
	}
	for _, d := range c.search {
		out = append(out, name+"."+d+".")
	}
	if !many {
		out = append(out, name+".")
	}
	return out
}

// query asks the name servers in turn for fqdn's A and AAAA records; nil
// and no error when a server says it has none.
func (c *dnsConfig) query(fqdn string, deadline time.Time) ([]netip.Addr, error) {
	q4, err := dnsQuery(fqdn, dnsTypeA)
	if err != nil {
		return nil, err
	}
	q6, _ := dnsQuery(fqdn, dnsTypeAAAA)
	if q6[0] == q4[0] && q6[1] == q4[1] {
		q6[1]++
	}
	var lastErr error
	for range c.attempts {
		for _, s := range c.servers {
			until := time.Now().Add(c.timeout)
			if deadline.Before(until) {
				until = deadline
			}
			ips, err := exchange(s, [][]byte{q4, q6}, until)
			if err == nil {
				return ips, nil
			}
			lastErr = err
			if time.Now().After(deadline) {
				return nil, err
			}
		}
	}
	return nil, lastErr
}

// DNS record types and the response codes read.
const (
	dnsTypeA     = 1
	dnsTypeAAAA  = 28
	dnsNXDomain  = 3
	dnsMaxPacket = 1232
)

// errServerFailed is a name server that did not answer the question.
var errServerFailed = errors.New("server misbehaving")

// dnsQuery is a recursive query of fqdn's records of type t, its id
// random.
func dnsQuery(fqdn string, t uint16) ([]byte, error) {
	id := rand.Uint32()
	q := []byte{byte(id >> 8), byte(id), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, label := range strings.Split(strings.TrimSuffix(fqdn, "."), ".") {
		if len(label) == 0 || len(label) > 63 {
			return nil, errors.New("lookup " + fqdn + ": not a host name")
		}
		q = append(append(q, byte(len(label))), label...)
	}
	if len(q) > 12+254 {
		return nil, errors.New("lookup " + fqdn + ": not a host name")
	}
	return append(q, 0, byte(t>>8), byte(t), 0, 1), nil
}

// exchange sends the queries to server on one UDP socket and returns the
// addresses of their answers: nil when the server says the name has none.
func exchange(server netip.AddrPort, queries [][]byte, until time.Time) ([]netip.Addr, error) {
	ip := server.Addr().Unmap()
	var sa syscall.Sockaddr
	family := syscall.AF_INET
	if ip.Is4() {
		sa = &syscall.SockaddrInet4{Port: int(server.Port()), Addr: ip.As4()}
	} else {
		family = syscall.AF_INET6
		sa = &syscall.SockaddrInet6{Port: int(server.Port()), Addr: ip.As16()}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_DGRAM, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	s := &socket{fd: fd, deadline: until}
	defer s.Close()
	if err := syscall.Connect(fd, sa); err != nil {
		return nil, os.NewSyscallError("connect", err)
	}
	for _, q := range queries {
		if _, err := s.Write(q); err != nil {
			return nil, err
		}
	}
	var ips []netip.Addr
	answered := map[uint16]bool{}
	buf := make([]byte, dnsMaxPacket)
	for len(answered) < len(queries) {
		n, err := s.Read(buf)
		if err != nil && len(ips) > 0 {
			break // a server that drops one of the questions: the other's answer
		}
		if err != nil {
			return nil, err
		}
		id, got, err := dnsAnswer(buf[:n], queries)
		if errors.Is(err, errNotOurs) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !answered[id] {
			answered[id] = true
			ips = append(ips, got...)
		}
	}
	// A first, as asked.
	var out []netip.Addr
	for _, want4 := range []bool{true, false} {
		for _, ip := range ips {
			if ip.Is4() == want4 {
				out = append(out, ip)
			}
		}
	}
	return out, nil
}

// errNotOurs is a datagram that answers none of the queries.
var errNotOurs = errors.New("not an answer to the query")

// dnsAnswer reads a response to one of queries: its id, and the addresses
// of its answer section (none for a name that does not exist).
func dnsAnswer(m []byte, queries [][]byte) (uint16, []netip.Addr, error) {
	if len(m) < 12 || m[2]&0x80 == 0 {
		return 0, nil, errNotOurs
	}
	var q []byte
	for _, c := range queries {
		if c[0] == m[0] && c[1] == m[1] {
			q = c
		}
	}
	// The question must be the query's (its name case-insensitively).
	if q == nil || len(m) < len(q) || !strings.EqualFold(string(m[12:len(q)]), string(q[12:])) {
		return 0, nil, errNotOurs
	}
	id := uint16(m[0])<<8 | uint16(m[1])
	switch rcode := m[3] & 0x0f; rcode {
	case 0:
	case dnsNXDomain:
		return id, nil, nil
	default:
		return 0, nil, errServerFailed
	}
	an := int(m[6])<<8 | int(m[7])
	i := len(q)
	var ips []netip.Addr
	for range an {
		var ok bool
		if i, ok = skipName(m, i); !ok || i+10 > len(m) {
			return 0, nil, errServerFailed
		}
		t, class, rdlen := uint16(m[i])<<8|uint16(m[i+1]), uint16(m[i+2])<<8|uint16(m[i+3]), int(m[i+8])<<8|int(m[i+9])
		i += 10
		if i+rdlen > len(m) {
			return 0, nil, errServerFailed
		}
		switch {
		case class != 1:
		case t == dnsTypeA && rdlen == 4:
			ips = append(ips, netip.AddrFrom4([4]byte(m[i:i+4])))
		case t == dnsTypeAAAA && rdlen == 16:
			ips = append(ips, netip.AddrFrom16([16]byte(m[i:i+16])))
		}
		i += rdlen
	}
	return id, ips, nil
}

// skipName returns where the name at m[i:] ends.
func skipName(m []byte, i int) (int, bool) {
	for i < len(m) {
		switch l := int(m[i]); {
		case l == 0:
			return i + 1, true
		case l&0xc0 == 0xc0:
			return i + 2, i+2 <= len(m)
		case l&0xc0 != 0:
			return i, false
		default:
			i += 1 + l
		}
	}
	return i, false
}
