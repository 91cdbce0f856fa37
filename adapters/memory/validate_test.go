package memory_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// countingClock is a manual clock that counts its readings: an operation
// that reads it has started store work.
type countingClock struct {
	memory.ManualClock
	reads atomic.Int64
}

func (c *countingClock) Now() time.Duration {
	c.reads.Add(1)
	return c.ManualClock.Now()
}

// invalidCall is one way to hand a store invalid input, called directly on
// the store or through the limiter.
type invalidCall struct {
	name string
	call func(ctx context.Context, f fixture) error
}

// invalidCalls returns every invalid input a memory store entry point can
// be given. valid is a check the store would accept.
func invalidCalls(t *testing.T, f fixture, valid domain.Check) []invalidCall {
	t.Helper()
	var nilCtx context.Context
	p := valid.Policy()
	tooLarge, err := domain.NewBatch(f.checks(p, 3), 3) // the stores below take 2
	require.NoError(t, err)
	overflow, err := domain.NewBatch(f.onShard(t, p, 0, 2), 2) // shard 0 holds 1
	require.NoError(t, err)
	driven, err := domain.NewBatch([]domain.Check{valid}, 1)
	require.NoError(t, err)
	driven.Observe(0, domain.Observation{})
	validBatch, err := domain.NewBatch([]domain.Check{valid}, 1)
	require.NoError(t, err)
	admitCheck := func(c domain.Check) func(context.Context, fixture) error {
		return func(ctx context.Context, f fixture) error {
			_, err := f.store.AdmitCheck(ctx, c)
			return err
		}
	}
	admit := func(b *domain.Batch) func(context.Context, fixture) error {
		return func(ctx context.Context, f fixture) error { return f.store.Admit(ctx, b) }
	}
	return []invalidCall{
		{"AdmitCheck of the zero check", admitCheck(domain.Check{})},
		{"AdmitCheck of a zero policy", admitCheck(domain.NewCheck(domain.Policy{}, valid.SubjectKey()))},
		{"AdmitCheck of a zero key", admitCheck(domain.NewCheck(p, domain.SubjectKey{}))},
		{"AdmitCheck with a nil context", func(_ context.Context, f fixture) error {
			_, err := f.store.AdmitCheck(nilCtx, valid)
			return err
		}},
		{"Admit of a nil batch", admit(nil)},
		{"Admit of a batch never prepared", admit(new(domain.Batch))},
		{"Admit of a batch larger than MaxBatchSize", admit(tooLarge)},
		{"Admit of a batch that overflows a shard", admit(overflow)},
		{"Admit with a nil context", func(_ context.Context, f fixture) error { return f.store.Admit(nilCtx, validBatch) }},
		{"CleanupExpired of a negative max", func(ctx context.Context, f fixture) error {
			_, err := f.store.CleanupExpired(ctx, -1)
			return err
		}},
		{"CleanupExpired with a nil context", func(_ context.Context, f fixture) error {
			_, err := f.store.CleanupExpired(nilCtx, 1)
			return err
		}},
		{"Stats with a nil context", func(_ context.Context, f fixture) error {
			_, err := f.store.Stats(nilCtx)
			return err
		}},
		{"limiter Check of the zero check", func(ctx context.Context, f fixture) error {
			_, err := f.limiter.Check(ctx, domain.Check{})
			return err
		}},
		{"limiter Check with a nil context", func(_ context.Context, f fixture) error {
			_, err := f.limiter.Check(nilCtx, valid)
			return err
		}},
		{"limiter CheckAll of a duplicate key", func(ctx context.Context, f fixture) error {
			_, err := f.limiter.CheckAll(ctx, []domain.Check{valid, valid})
			return err
		}},
		{"limiter CheckAll with a nil context", func(_ context.Context, f fixture) error {
			_, err := f.limiter.CheckAll(nilCtx, []domain.Check{valid})
			return err
		}},
		// driven is last: the store it meets must not drive it further.
		{"Admit of a batch already driven", admit(driven)},
	}
}

// checks returns n checks of p with distinct subjects.
func (f fixture) checks(p domain.Policy, n int) []domain.Check {
	out := make([]domain.Check, n)
	for i := range out {
		out[i] = f.check(p, "subject-"+string(rune('a'+i)))
	}
	return out
}

// TestInvalidInputDoesNoStoreWork: every entry point rejects invalid input
// before it takes a lock, reads the clock, raises a shard's clock floor or
// removes an expired entry.
func TestInvalidInputDoesNoStoreWork(t *testing.T) {
	t.Parallel()
	clock := new(countingClock)
	f := setup(t, memory.Config{MaxKeys: 2, Shards: 2, MaxBatchSize: 2, Clock: clock})
	p := policy(1, time.Minute)
	expired := f.onShard(t, p, 0, 1)[0]
	f.allow(t, expired)
	clock.Set(time.Hour) // expired's window is over: any check on shard 0 would remove it
	valid := f.onShard(t, p, 0, 2)[1]
	reads, floor := clock.reads.Load(), f.store.Floor(0)

	for _, c := range invalidCalls(t, f, valid) {
		err := c.call(context.Background(), f)
		if c.name == "Admit of a batch already driven" {
			require.ErrorIs(t, err, domain.ErrBatchProtocol, c.name)
		} else {
			require.ErrorIs(t, err, domain.ErrInvalidInput, c.name)
		}
		require.False(t, ports.MayHaveConsumedQuota(err), c.name)
		require.Equal(t, reads, clock.reads.Load(), "%s read the clock", c.name)
		require.Equal(t, floor, f.store.Floor(0), "%s moved shard 0's clock floor", c.name)
		require.True(t, f.store.Holds(expired.CounterKey()), "%s ran cleanup", c.name)
	}
	require.Empty(t, f.store.PoisonedShards())
	// The store still works, and the expired entry goes at the next check.
	f.allow(t, valid)
	require.False(t, f.store.Holds(expired.CounterKey()))
}

// TestInvalidInputIsReportedWhateverTheStoreState: a done context or a
// closed store never hides a caller's mistake.
func TestInvalidInputIsReportedWhateverTheStoreState(t *testing.T) {
	t.Parallel()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	states := map[string]func(f fixture) context.Context{
		"done context": func(fixture) context.Context { return done },
		"closed store": func(f fixture) context.Context {
			require.NoError(t, f.store.Close())
			return context.Background()
		},
		"closed store and done context": func(f fixture) context.Context {
			require.NoError(t, f.store.Close())
			return done
		},
	}
	for name, state := range states {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, memory.Config{MaxKeys: 2, Shards: 2, MaxBatchSize: 2})
			p := policy(1, time.Minute)
			valid := f.onShard(t, p, 0, 1)[0]
			calls := invalidCalls(t, f, valid)
			ctx := state(f)
			for _, c := range calls {
				err := c.call(ctx, f)
				if c.name == "Admit of a batch already driven" {
					require.ErrorIs(t, err, domain.ErrBatchProtocol, c.name)
					continue
				}
				require.ErrorIs(t, err, domain.ErrInvalidInput, c.name)
			}
		})
	}
}

// TestNilStoreFailsClosed: a nil *Store is a closed store, never a panic.
func TestNilStoreFailsClosed(t *testing.T) {
	t.Parallel()
	var s *memory.Store
	ctx := context.Background()
	f := setup(t, memory.Config{MaxKeys: 1})
	c := f.check(policy(1, time.Minute), "a")
	b, err := domain.NewBatch([]domain.Check{c}, 1)
	require.NoError(t, err)

	_, err = s.AdmitCheck(ctx, c)
	requireClosed(t, err, "admit")
	requireClosed(t, s.Admit(ctx, b), "admit")
	_, err = s.CleanupExpired(ctx, 1)
	requireClosed(t, err, "cleanup")
	_, err = s.Stats(ctx)
	requireClosed(t, err, "stats")
	require.NoError(t, s.Close())
	require.Nil(t, s.PoisonedShards())
	require.Zero(t, s.RecoverPoisoned())
	require.Equal(t, "memory.Store(nil)", s.String())
	// Invalid input is still reported as such.
	_, err = s.AdmitCheck(ctx, domain.Check{})
	require.ErrorIs(t, err, domain.ErrInvalidInput)
	require.ErrorIs(t, s.Admit(ctx, nil), domain.ErrInvalidInput)
}
