//go:build !unix

package tools_test

func processGone(int) bool { return true }

const unixShell = false
