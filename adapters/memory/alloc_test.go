//go:build !race

// The race detector makes sync.Pool drop items on purpose, so allocation
// counts are only meaningful without it. These tests are not parallel:
// testing.AllocsPerRun refuses to run in a parallel test.

package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
)

// TestAdmissionsDoNotAllocate drives both entry points of the one
// admission flow in the steady state, renewals and new keys included: a
// single check plans on the stack and a batch reuses a pooled plan, so
// neither allocates.
func TestAdmissionsDoNotAllocate(t *testing.T) {
	f := setup(t, memory.Config{MaxKeys: 64, Shards: 8})
	ctx := context.Background()
	p := policy(1_000_000, time.Second)
	one := f.check(p, "one")
	pair := []domain.Check{f.check(p, "a"), f.check(p, "b")}
	batch, err := domain.NewBatch(pair, 0)
	require.NoError(t, err)
	var failed error
	run := func() {
		// Each run starts a new window, so renewals re-sift the heap.
		f.clock.Advance(2 * time.Second)
		if _, err := f.store.AdmitCheck(ctx, one); err != nil {
			failed = err
		}
		if err := batch.Reset(pair, 0); err != nil {
			failed = err
		}
		if err := f.store.Admit(ctx, batch); err != nil {
			failed = err
		}
	}
	run()
	require.NoError(t, failed)
	require.Zero(t, testing.AllocsPerRun(100, run))
	require.NoError(t, failed)
}
