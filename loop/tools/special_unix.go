//go:build unix

package tools

import (
	"io/fs"
	"syscall"
)

// openNoWait is added to the flags of every open of the file tools: a FIFO
// does not block the open, and a terminal does not become the worker's.
const openNoWait = syscall.O_NONBLOCK | syscall.O_NOCTTY

// links is how many hard links the file of fi has (1 when the system does
// not say).
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
