package conformance

import (
	"context"
	"errors"
	"testing"
	"time"
)

// testDoneContextWithCause is testDoneContext for contexts ended with a
// cause (context.WithCancelCause, context.WithDeadlineCause), as servers
// end a request's context: the store's error matches ctx.Err(), which is
// still context.Canceled or context.DeadlineExceeded. A store that reports
// context.Cause(ctx) instead matches only the cause, and a caller that
// tells a cancellation from a failure with errors.Is takes it for a
// failure; without a cause the two are the same error, so no other case
// tells them apart.
func testDoneContextWithCause(t *testing.T, f *fixture) {
	const g = "context: a context ended with a cause admits nothing: the store's error matches ctx.Err() " +
		"(context.Canceled or context.DeadlineExceeded), not only the cause, and says nothing was consumed"
	cancelled, cancel := context.WithCancelCause(f.ctx)
	cancel(errors.New("conformance: the client went away"))
	expired, cancelExpired := context.WithDeadlineCause(f.ctx, time.Unix(0, 0), errors.New("conformance: the request took too long"))
	defer cancelExpired()
	f.requireDoneContextsAdmitNothing(g, []doneContext{
		{"ctx cancelled with a cause", cancelled, context.Canceled},
		{"ctx past its deadline with a cause", expired, context.DeadlineExceeded},
	})
}
