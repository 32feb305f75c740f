//go:build !unix

package tools

import "io/fs"

// openNoWait adds nothing where FIFOs do not block an open.
const openNoWait = 0

// links is 1 where the system does not count hard links here.
func links(fs.FileInfo) uint64 { return 1 }
