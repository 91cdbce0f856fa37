package leaktable_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// misbehaving is a host store, over a memory store, whose readiness check
// panics with the subject and whose cleanup reports more counters than it
// was allowed to remove.
type misbehaving struct {
	*memory.Store
	panicky bool
}

func (s misbehaving) Ready(context.Context) error {
	if s.panicky {
		panic("ready for " + subject)
	}
	return nil
}

func (s misbehaving) CleanupExpired(_ context.Context, max int) (int, error) { return max + 1, nil }

// hostStoreCases are the errors a Runtime returns about a host store that
// misbehaves: a readiness check that panics (wiring.ErrReadyPanicked) and
// an impossible cleanup count (wiring.ErrCleanupCount), as the Runtime
// builds them.
func hostStoreCases(t *testing.T, f fixture) []leakcheck.Case {
	t.Helper()
	ctx := context.Background()
	newStore := func(panicky bool) misbehaving {
		s, err := memory.New(memory.Config{MaxKeys: 10})
		require.NoError(t, err)
		_, err = s.AdmitCheck(ctx, f.check)
		require.NoError(t, err)
		return misbehaving{Store: s, panicky: panicky}
	}
	_, readyErr := wiring.Open(ctx, wiring.Config{Store: newStore(true), KeySecret: wiring.NewSecret(keySecret), CleanupInterval: -1})
	require.ErrorIs(t, readyErr, wiring.ErrReadyPanicked)

	errs := make(chan error, 1)
	r, err := wiring.Open(ctx, wiring.Config{Store: newStore(false), KeySecret: wiring.NewSecret(keySecret),
		CleanupInterval: time.Millisecond, CleanupErrorFunc: func(err error) {
			select {
			case errs <- err:
			default:
			}
		}})
	require.NoError(t, err)
	var countErr error
	select {
	case countErr = <-errs:
	case <-time.After(time.Minute):
		t.Fatal("no cleanup pass reported its count")
	}
	require.NoError(t, r.Close(ctx))
	require.ErrorIs(t, countErr, wiring.ErrCleanupCount)
	return []leakcheck.Case{
		leakcheck.Value("wiring.ErrReadyPanicked", readyErr),
		leakcheck.Value("wiring.ErrCleanupCount", countErr),
	}
}
