package conformance

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// testBatchBeforeNilContext hands Admit a batch that is not ready
// together with a nil context. Both are the caller's mistakes, and
// ports.Store names the batch first: the store answers with Batch.Ready's
// error, so that a caller that drove a batch twice hears that, whatever
// else is wrong. (Both errors match domain.ErrInvalidInput, so only the
// error itself tells them apart: Ready's is a *domain.BatchError for a nil
// or unprepared batch, and domain.ErrBatchProtocol for one already
// evaluated; ports.ErrNilContext is neither.)
func testBatchBeforeNilContext(t *testing.T, f *fixture) {
	const g = "batches: a batch that is not ready is reported before a nil context (ports.Store: Batch.Ready first)"
	var nilCtx context.Context
	p, k := f.policy(2, window), f.key()
	driven, err := domain.NewBatch([]domain.Check{f.check(p, k)}, f.opts.MaxBatchSize)
	require.NoError(t, err, "harness: a batch of one")
	f.admitDirect(driven, "a batch of one", g)
	f.requireReadyErrorFirst(g, "nil ctx", nilCtx, ports.ErrNilContext, driven)
	f.allow(f.check(p, k), 0, g+" (only the batch of one was counted)")
}

// requireReadyErrorFirst hands Admit each batch that is not ready (nil,
// the zero Batch, and driven, a batch of one already evaluated) with ctx,
// itself a caller's mistake whose error is ctxErr, and requires
// Batch.Ready's error back rather than ctxErr: ports.Store names the batch
// first.
func (f *fixture) requireReadyErrorFirst(g, ctxName string, ctx context.Context, ctxErr error, driven *domain.Batch) {
	t := f.t
	t.Helper()
	for _, bad := range []struct {
		name  string
		batch *domain.Batch
	}{
		{"a nil batch", nil},
		{"the zero Batch", new(domain.Batch)},
		{"the batch of one again, already evaluated", driven},
	} {
		want := bad.batch.Ready()
		f.admits.Add(1)
		f.rep.admits.Add(1)
		err := f.guard(func() error { return f.inst.Store.Admit(ctx, bad.batch) })
		f.log.add("Admit(%s, %s) → error: %v", ctxName, bad.name, err)
		var pe *panicError
		require.False(t, errors.As(err, &pe), "%s (%s, %s): the store panicked: %v", g, bad.name, ctxName, err)
		require.Error(t, err, "%s (%s, %s)", g, bad.name, ctxName)
		require.False(t, errors.Is(err, ctxErr) && !errors.Is(want, ctxErr),
			"%s (%s, %s): the store answered the context first: %v", g, bad.name, ctxName, err)
		var wantBatch *domain.BatchError
		if errors.As(want, &wantBatch) {
			var got *domain.BatchError
			require.ErrorAs(t, err, &got, "%s (%s, %s): return Batch.Ready's error", g, bad.name, ctxName)
			require.Equal(t, wantBatch.Problem, got.Problem, "%s (%s, %s): return Batch.Ready's error", g, bad.name, ctxName)
		} else {
			require.ErrorIs(t, err, want, "%s (%s, %s): return Batch.Ready's error", g, bad.name, ctxName)
		}
	}
}
