//go:build !linux

package main

import "time"

// dial connects to addr (host:port) before deadline.
func dial(addr string, deadline time.Time) (conn, error) { return dialNet(addr, deadline) }
