//go:build !linux

package main

import (
	"net"
	"time"
)

// dial connects to addr (host:port) before deadline with package net.
func dial(addr string, deadline time.Time) (conn, error) {
	d := net.Dialer{Deadline: deadline}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(deadline)
	return c, nil
}
