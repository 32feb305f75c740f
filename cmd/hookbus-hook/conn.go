package main

import "io"

// conn is the one connection to the gateway.
type conn = io.ReadWriteCloser
