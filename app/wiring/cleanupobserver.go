package wiring

import (
	"context"
	"log/slog"

	"github.com/runlimit/runlimit/internal/nilcheck"
)

// CleanupObserver sees every pass of the Runtime's cleanup loop over each
// of its stores: a tracer starts a span in StartCleanup that the store's
// own calls nest under and ends it in EndCleanup; a metrics recorder
// counts runs, counters removed and failures. Both are called on the
// loop's goroutine, so they must not block for long; a panic in either is
// recovered and logged at error level, and the loop goes on.
//
// The adapter of [github.com/runlimit/runlimit/adapters/otelrunlimit]
// implements it.
type CleanupObserver interface {
	// StartCleanup is called before a pass over the named store ("gate",
	// "memory", "postgres" or "store"). The pass runs with the context it
	// returns; nil means ctx unchanged. Close cancels the pass even when
	// that context is not derived from ctx: the pass gets its values and
	// ends when either context does.
	StartCleanup(ctx context.Context, store string) context.Context
	// EndCleanup is called after the pass with the context StartCleanup
	// returned, the number of counters removed and the store's error:
	// nil, the store's failure (the loop retries at its next tick; a
	// panic of the store's CleanupExpired is one, matching
	// [ErrCleanupPanicked]), or the context's error when the Runtime is
	// closing and the pass was cut short. An observer whose StartCleanup
	// panicked sees nothing more of that pass.
	EndCleanup(ctx context.Context, store string, removed int, err error)
}

// StartReporter is implemented by a [CleanupObserver] with something to
// add to the Runtime's "runlimit: started" record, such as the fx
// module's telemetry, which says whether metrics and spans are recorded.
// The Runtime calls StartAttrs of each of its cleanup observers that
// implements it once, as it starts, after the cleanup loop has started.
// The attributes must hold no key, subject or secret.
type StartReporter interface {
	StartAttrs() []slog.Attr
}

// JoinCleanupObservers returns a CleanupObserver that hands every pass to
// each of observers in order, nil ones (a nil pointer in the interface
// included) left out, such as the otelrunlimit adapter and a host's own.
// The Runtime's loop calls each one apart, recovering each one's panic,
// so one that panics costs the others nothing; each ends a pass with the
// context its own StartCleanup returned. It returns nil when no observer
// is left, and the observer itself when only one is.
func JoinCleanupObservers(observers ...CleanupObserver) CleanupObserver {
	joined := joinedCleanupObservers(nilcheck.Flatten(observers, func(o CleanupObserver) ([]CleanupObserver, bool) {
		j, ok := o.(joinedCleanupObservers)
		return j, ok
	}))
	switch len(joined) {
	case 0:
		return nil
	case 1:
		return joined[0]
	}
	return joined
}

// cleanupObserverList returns the observers o stands for, each to be
// called apart: those it joins, or o alone, or none for nil.
func cleanupObserverList(o CleanupObserver) []CleanupObserver {
	switch o := o.(type) {
	case nil:
		return nil
	case joinedCleanupObservers:
		return o
	}
	return []CleanupObserver{o}
}

// joinedCleanupObservers is what [JoinCleanupObservers] returns for two
// or more. The loop does not call its methods: it calls each observer
// itself. They serve a host that calls the joined observer directly.
type joinedCleanupObservers []CleanupObserver

// ownContexts is the context key under which a pass keeps each
// observer's context.
type ownContexts struct{}

// StartCleanup hands the pass to each observer in turn, each starting from
// the context the one before returned. A nil ctx is context.Background.
func (j joinedCleanupObservers) StartCleanup(ctx context.Context, store string) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	own := make([]context.Context, len(j))
	for i, o := range j {
		if next := o.StartCleanup(ctx, store); next != nil {
			ctx = next
		}
		own[i] = ctx
	}
	return context.WithValue(ctx, ownContexts{}, own)
}

// EndCleanup ends the pass of each observer with the context its own
// StartCleanup returned. A nil ctx is context.Background.
func (j joinedCleanupObservers) EndCleanup(ctx context.Context, store string, removed int, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	own, _ := ctx.Value(ownContexts{}).([]context.Context)
	for i, o := range j {
		c := ctx
		if i < len(own) {
			c = own[i]
		}
		o.EndCleanup(c, store, removed, err)
	}
}
