package wiring_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
)

// TestCleanupLoopRefusesAnImpossibleCount: ports.Cleaner removes at most
// max counters and says how many, but the loop took any count: one above
// the batch read as "a full batch, more may be waiting", so a store that
// reported its backlog, or a total, instead of what it removed was called
// back to back, without end, for as long as it did; a negative one was
// added to the pass's total, logged and handed to the observers. Either is
// now a failed call matching [wiring.ErrCleanupCount] that ends the
// store's pass, reported as every cleanup failure is.
func TestCleanupLoopRefusesAnImpossibleCount(t *testing.T) {
	t.Parallel()
	for _, n := range []int{11, -5} {
		s := setupLoop(t)
		tick(t, s.ticks)
		answer(t, s.first, 10, n, nil)
		// The pass moves on to the next store: the first is not called again.
		answer(t, s.second, 10, 0, nil)
		err := <-s.errs
		var ce *wiring.CleanupError
		require.ErrorAs(t, err, &ce, "n=%d", n)
		require.Equal(t, "c0", ce.Store)
		require.ErrorIs(t, err, wiring.ErrCleanupCount, "n=%d", n)
		require.NoError(t, s.stop(context.Background()))
		require.Empty(t, s.errs)
	}
}
