package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runlimit/runlimit/domain"
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
	p := f.policy(2, window)
	k, other := f.key(), f.key()
	cancelled, cancel := context.WithCancelCause(f.ctx)
	cancel(errors.New("conformance: the client went away"))
	expired, cancelExpired := context.WithDeadlineCause(f.ctx, time.Unix(0, 0), errors.New("conformance: the request took too long"))
	defer cancelExpired()
	for _, dc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"ctx cancelled with a cause", cancelled, context.Canceled},
		{"ctx past its deadline with a cause", expired, context.DeadlineExceeded},
	} {
		d, err := f.applyWith(dc.ctx, dc.name, f.check(p, k), f.path)
		f.requireDoneContextRefused(err, dc.want, fmt.Sprintf("%s (a single check via %s, %s)", g, f.path, dc.name), describe(d))
		checks := []domain.Check{f.check(p, other), f.check(p, k)}
		var bd domain.BatchDecision
		err = f.guard(func() (err error) {
			bd, err = f.limiter.CheckAll(dc.ctx, checks)
			return err
		})
		f.log.add("batch %s via Admit with %s → %s, error: %v", f.log.batch(checks), dc.name, describeBatch(bd), err)
		f.requireDoneContextRefused(err, dc.want, fmt.Sprintf("%s (a batch via Admit, %s)", g, dc.name), describeBatch(bd))
	}
	a := f.allow(f.check(p, k), 1, g+" (the key is still new: the refused calls consumed nothing)")
	f.requireDuration(window, a.ResetAfter, g+" (the window starts at this check)")
	f.allow(f.check(p, other), 1, g+" (the batch's other key is still new too)")
}
