// Package deadline bounds the requests that hookbus' bus packages make to
// the server, and keeps a request's context error visible in its error.
package deadline

import (
	"context"
	"errors"
	"time"
)

// Default returns ctx bounded by d when ctx has no deadline of its own, and
// ctx as it is otherwise.
func Default(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// Err keeps the context error of a failed request visible to errors.Is
// when jetstream reported it in its own words. A nil err stays nil.
func Err(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return errors.Join(err, cerr)
	}
	return err
}
