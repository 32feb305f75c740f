package main

import "errors"

var (
	// errUsage is a command line or setting that cannot be meant.
	errUsage = errors.New("usage")
	// errNotHTTP is a URL hookbus-hook cannot post to.
	errNotHTTP = errors.New("not an http:// URL")
)

// usageError is errUsage with what is wrong.
func usageError(msg string) error { return &wrapped{msg: errUsage.Error() + ": " + msg, err: errUsage} }

// wrapped is an error that says msg and wraps err.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }
