package runlimitfx

import (
	"context"

	"github.com/runlimit/runlimit/app/wiring"
)

// joinCleanupObservers returns one CleanupObserver for the non-nil ones
// of observers (nil for none), so that the module's telemetry joins a host's own rather
// than replacing it.
func joinCleanupObservers(observers ...wiring.CleanupObserver) wiring.CleanupObserver {
	var joined cleanupObservers
	for _, o := range observers {
		if o != nil {
			joined = append(joined, o)
		}
	}
	switch len(joined) {
	case 0:
		return nil
	case 1:
		return joined[0]
	}
	return joined
}

// cleanupObservers hands every pass to each observer in turn, each ending
// with the context its own StartCleanup returned.
type cleanupObservers []wiring.CleanupObserver

// ownContexts is the context key under which a pass keeps each
// observer's context.
type ownContexts struct{}

func (j cleanupObservers) StartCleanup(ctx context.Context, store string) context.Context {
	own := make([]context.Context, len(j))
	for i, o := range j {
		if next := o.StartCleanup(ctx, store); next != nil {
			ctx = next
		}
		own[i] = ctx
	}
	return context.WithValue(ctx, ownContexts{}, own)
}

func (j cleanupObservers) EndCleanup(ctx context.Context, store string, removed int, err error) {
	own, _ := ctx.Value(ownContexts{}).([]context.Context)
	for i, o := range j {
		c := ctx
		if i < len(own) {
			c = own[i]
		}
		o.EndCleanup(c, store, removed, err)
	}
}
