package main

import (
	"io"
	"net"
	"time"
)

// conn is the one connection to the gateway.
type conn = io.ReadWriteCloser

// dialNet connects to addr before deadline with package net.
func dialNet(addr string, deadline time.Time) (conn, error) {
	d := net.Dialer{Deadline: deadline}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(deadline)
	return c, nil
}
