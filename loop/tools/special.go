package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// The file tools use regular files and directories only. A named pipe
// (FIFO), a device or a socket is refused without being read or written:
// opening a FIFO waits for a writer (or reader) forever, and reading a
// device such as /dev/zero never ends. The check is made before opening
// (a Stat through os.Root, which follows symlinks inside the root and opens
// nothing), the file is opened with O_NONBLOCK (so that a FIFO put in its
// place meanwhile does not block the open) and checked again on the open
// file (Fstat), so that a swap between the check and the open is refused
// as well.

// notPlainError is the error of openPlain for a file that is neither
// regular nor a directory; FS.wrap turns it into an ErrNotRegular naming
// the path.
type notPlainError struct{ mode fs.FileMode }

func (e *notPlainError) Error() string { return "is " + kindOf(e.mode) }

// plain reports whether the file tools use a file of mode m.
func plain(m fs.FileMode) bool { return m.IsRegular() || m.IsDir() }

// kindOf names what a file of mode m is, for errors.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

// openPlain opens name (relative to r) with flag, if it is a regular file
// or a directory (or does not exist and flag creates it), and returns it
// with its FileInfo. Anything else is a *notPlainError, found without
// blocking (see above). Other errors are os.Root's.
func openPlain(r *os.Root, name string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	fi, err := r.Stat(name)
	switch {
	case err == nil && !plain(fi.Mode()):
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: &notPlainError{fi.Mode()}}
	case err != nil && (flag&os.O_CREATE == 0 || !errors.Is(err, fs.ErrNotExist)):
		return nil, nil, err
	}
	file, err := r.OpenFile(name, flag|openNoWait, perm)
	if err != nil {
		return nil, nil, err
	}
	fi, err = file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	if !plain(fi.Mode()) {
		file.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: &notPlainError{fi.Mode()}}
	}
	if n := links(fi); fi.Mode().IsRegular() && n > 1 {
		file.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: &linkedError{n}}
	}
	return file, fi, nil
}

// linkedError is the error of openPlain for a regular file with more than
// one hard link: its other names may lie outside the root (a hard link
// made there to a file elsewhere), and nothing in the file says where.
type linkedError struct{ links uint64 }

func (e *linkedError) Error() string { return fmt.Sprintf("has %d hard links", e.links) }

// isLinked reports whether err is openPlain refusing a hard-linked file,
// and its link count.
func isLinked(err error) (uint64, bool) {
	var le *linkedError
	if errors.As(err, &le) {
		return le.links, true
	}
	return 0, false
}

// isNotPlain reports whether err is openPlain refusing a file, and the
// file's mode.
func isNotPlain(err error) (fs.FileMode, bool) {
	var np *notPlainError
	if errors.As(err, &np) {
		return np.mode, true
	}
	return 0, false
}

// notRegular is the error for the argument p, of mode m.
func notRegular(p string, m fs.FileMode) error {
	return fmt.Errorf("%w: %s is %s; the file tools use regular files and directories only", ErrNotRegular, p, kindOf(m))
}

// specialNote is the closing note of a search that left out entries that
// are neither regular files nor directories (FIFOs, devices, sockets): how
// many, and the first few.
func specialNote(paths []string, what string) string {
	if len(paths) == 0 {
		return ""
	}
	const show = 10
	names := paths
	if len(names) > show {
		names = names[:show]
	}
	list := strings.Join(names, ", ")
	if len(paths) > show {
		list += fmt.Sprintf(", and %d more", len(paths)-show)
	}
	if len(paths) == 1 {
		return fmt.Sprintf("\n(1 entry is not a regular file (a FIFO, device or socket) and was %s: %s)", what, list)
	}
	return fmt.Sprintf("\n(%d entries are not regular files (FIFOs, devices or sockets) and were %s: %s)", len(paths), what, list)
}
