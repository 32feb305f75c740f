//go:build unix

package tools

import "syscall"

// openNoWait is added to the flags of every open of the file tools: a FIFO
// does not block the open, and a terminal does not become the worker's.
const openNoWait = syscall.O_NONBLOCK | syscall.O_NOCTTY
