//go:build linux

package main

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"time"
)

// dial connects to addr (host:port) before deadline. An IP address is
// connected with the socket calls themselves, blocking, each bounded by
// the time left (SO_SNDTIMEO, SO_RCVTIMEO; on Linux they bound connect
// too): no network poller is started and no other thread is woken for
// the one connection the process makes. A host name goes through package
// net.
func dial(addr string, deadline time.Time) (conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip, err := netip.ParseAddr(host)
	p, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil || ip.Zone() != "" {
		return dialNet(addr, deadline)
	}
	var sa syscall.Sockaddr
	family := syscall.AF_INET
	if ip.Is4() {
		sa = &syscall.SockaddrInet4{Port: int(p), Addr: ip.As4()}
	} else {
		family = syscall.AF_INET6
		sa = &syscall.SockaddrInet6{Port: int(p), Addr: ip.As16()}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	s := &socket{fd: fd, deadline: deadline}
	if err := s.connect(sa); err != nil {
		s.Close()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, uint16(p))), Err: err}
	}
	// The request is one write; without Nagle a large one's last segment
	// does not wait for the first's acknowledgement.
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	return s, nil
}

// errTimeout is a socket call that outlived the deadline (Linux only: the
// other systems' hooks connect through package net, whose errors say so).
var errTimeout = errors.New("i/o timeout")

// socket is a blocking connected socket whose calls end at deadline.
type socket struct {
	fd       int
	deadline time.Time
}

// bound sets opt (SO_SNDTIMEO or SO_RCVTIMEO) to the time left.
func (s *socket) bound(opt int) error {
	left := time.Until(s.deadline)
	if left <= 0 {
		return errTimeout
	}
	tv := syscall.NsecToTimeval(max(left.Nanoseconds(), int64(time.Microsecond)))
	return syscall.SetsockoptTimeval(s.fd, syscall.SOL_SOCKET, opt, &tv)
}

func (s *socket) connect(sa syscall.Sockaddr) error {
	for {
		if err := s.bound(syscall.SO_SNDTIMEO); err != nil {
			return err
		}
		switch err := syscall.Connect(s.fd, sa); err {
		case nil, syscall.EISCONN:
			return nil
		case syscall.EINTR, syscall.EALREADY:
			// Interrupted, the connection goes on being made: ask again.
			time.Sleep(time.Millisecond)
		case syscall.EINPROGRESS, syscall.EAGAIN:
			return errTimeout
		default:
			return os.NewSyscallError("connect", err)
		}
	}
}

func (s *socket) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		if err := s.bound(syscall.SO_SNDTIMEO); err != nil {
			return n, err
		}
		m, err := syscall.Write(s.fd, b[n:])
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			return n, errTimeout
		case err != nil:
			return n, err
		default:
			n += m
		}
	}
	return n, nil
}

func (s *socket) Read(b []byte) (int, error) {
	for {
		if err := s.bound(syscall.SO_RCVTIMEO); err != nil {
			return 0, err
		}
		n, err := syscall.Read(s.fd, b)
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			return 0, errTimeout
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		default:
			return n, nil
		}
	}
}

func (s *socket) Close() error { return syscall.Close(s.fd) }
