package main

import "errors"

var (
	// errUsage is returned for a bad command line.
	errUsage = errors.New("usage")
	// errChild is returned when a child process fails to start or exits early.
	errChild = errors.New("child process failed")
	// errStalled is returned when runs stop completing before a deadline.
	errStalled = errors.New("runs stalled")
)
