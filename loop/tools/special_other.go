//go:build !unix

package tools

// openNoWait adds nothing where FIFOs do not block an open.
const openNoWait = 0
