package wire

import "context"

// afterFuncer is what the engines' request contexts implement (h1's and
// h2's): run a function once the context is done.
type afterFuncer interface {
	AfterFunc(f func()) (stop func() bool)
}

// AfterFunc is context.AfterFunc, calling the context's own AfterFunc
// directly when it has one (Arka's engines' request contexts do). For
// such a context, context.AfterFunc makes a cancelCtx of its own, asks
// for the context's Done channel and wraps the stop function: six
// allocations per proxied or FastCGI request, against one this way.
// stop reports, as context.AfterFunc's does, whether it prevented f.
func AfterFunc(ctx context.Context, f func()) (stop func() bool) {
	if a, ok := ctx.(afterFuncer); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(ctx, f)
}
