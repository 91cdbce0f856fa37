package mapstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/examples/mapstore"
	"github.com/runlimit/runlimit/ports"
)

// TestAdmitReportsInvalidInputFirst: a nil or unprepared batch and a nil
// context are the caller's mistakes, reported as such before the store
// reads its clock, even when the context is done; a batch some store has
// already driven is refused without being driven again.
func TestAdmitReportsInvalidInputFirst(t *testing.T) {
	t.Parallel()
	var reads atomic.Int64
	store, err := mapstore.New(mapstore.Config{Capacity: 10, Clock: func() time.Duration {
		reads.Add(1)
		return 0
	}})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("mapstore-test-secret-of-32-bytes"))
	require.NoError(t, err)
	p := domain.MustPolicy("test.mapstore", "subject", 1, time.Minute)
	check := domain.NewCheck(p, hasher.KeyString(p, "user@example.test"))
	valid, err := domain.NewBatch([]domain.Check{check}, 1)
	require.NoError(t, err)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var nilCtx context.Context

	for name, ctx := range map[string]context.Context{"live": context.Background(), "done": done} {
		require.ErrorIs(t, store.Admit(ctx, nil), domain.ErrInvalidInput, name)
		require.ErrorIs(t, store.Admit(ctx, new(domain.Batch)), domain.ErrInvalidInput, name)
	}
	require.ErrorIs(t, store.Admit(nilCtx, valid), ports.ErrNilContext)
	err = store.Admit(done, valid)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ports.MayHaveConsumedQuota(err))
	require.Zero(t, reads.Load(), "no store work")

	require.NoError(t, store.Admit(context.Background(), valid))
	require.Equal(t, int64(1), reads.Load())
	err = store.Admit(context.Background(), valid)
	require.ErrorIs(t, err, domain.ErrBatchProtocol)
	var ae *mapstore.AdmitError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, int64(1), reads.Load(), "a driven batch is not driven again")
}
