package memory

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// The optimistic path steps aside, changing no counter, whenever what it
// read without the shard's lock may be stale or the locked flow has work
// to do; and it takes the check when none of that holds.
func TestOptimisticPathStepsAside(t *testing.T) {
	t.Parallel()
	hasher, err := domain.NewKeyHasher([]byte("optimistic-test-secret-of-32-by!"))
	require.NoError(t, err)
	long := domain.MustPolicy("test.optimistic", "long", 5, time.Hour)
	short := domain.MustPolicy("test.optimistic", "short", 5, time.Second)
	stored := domain.NewCheck(long, hasher.KeyString(long, "stored"))
	absent := domain.NewCheck(long, hasher.KeyString(long, "absent"))
	expiring := domain.NewCheck(short, hasher.KeyString(short, "expiring"))

	type fixture struct {
		s     *Store
		clock *ManualClock
		sh    *shard
	}
	fresh := func(t *testing.T) fixture {
		clock := NewManualClock()
		s, err := New(Config{MaxKeys: 8, Clock: clock})
		require.NoError(t, err)
		_, err = s.AdmitCheck(context.Background(), stored)
		require.NoError(t, err)
		return fixture{s: s, clock: clock, sh: &s.shards[0]}
	}
	// try runs c through the optimistic path alone and returns whether it
	// took the check, and the stored counter's use afterwards.
	try := func(t *testing.T, f fixture, c domain.Check) (bool, int64) {
		var (
			seen observed
			d    domain.Decision
		)
		done, err := f.s.admitOptimistic(&c, c.CounterKeyHash64(), f.sh, 0, &seen, &d)
		require.NoError(t, err)
		k := stored.CounterKey()
		return done, f.sh.counter(must(f.sh.lookup(&k))).Used
	}

	t.Run("takes an active stored key", func(t *testing.T) {
		f := fresh(t)
		done, used := try(t, f, stored)
		require.True(t, done)
		require.Equal(t, int64(2), used)
	})
	t.Run("a holder of the shard's lock is at work", func(t *testing.T) {
		f := fresh(t)
		f.sh.lockWriter()
		done, used := try(t, f, stored)
		f.sh.unlockWriter()
		require.False(t, done)
		require.Equal(t, int64(1), used)
	})
	t.Run("the shard changed after the sequence number was read", func(t *testing.T) {
		f := fresh(t)
		seq := f.sh.seq.Load()
		f.sh.lockWriter()
		f.sh.unlockWriter()
		require.Nil(t, f.sh.findEntry(stored.CounterKeyHash64(), seq), "a find across a change is not trusted")
		now := f.sh.seq.Load()
		e := f.sh.findEntry(stored.CounterKeyHash64(), now)
		require.NotNil(t, e)
		e.mu.Lock()
		require.True(t, f.sh.holds(e, &stored, now))
		require.False(t, f.sh.holds(e, &stored, seq), "a lock taken across a change is not trusted")
		require.False(t, f.sh.holds(e, &absent, now), "another key's entry is not the check's")
		e.mu.Unlock()
	})
	t.Run("an absent key needs a slot", func(t *testing.T) {
		f := fresh(t)
		done, _ := try(t, f, absent)
		require.False(t, done)
		require.Equal(t, 1, f.sh.len())
	})
	// Time moves past an expiry: another key's (cleanup is due on the
	// shard) or the stored key's own (a renewal).
	for _, c := range []struct {
		name    string
		expired []domain.Check
		advance time.Duration
	}{
		{"cleanup is due on the shard", []domain.Check{expiring}, 2 * time.Second},
		{"the key's own window has expired", nil, 2 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fresh(t)
			for _, e := range c.expired {
				_, err := f.s.AdmitCheck(context.Background(), e)
				require.NoError(t, err)
			}
			f.clock.Advance(c.advance)
			done, used := try(t, f, stored)
			require.False(t, done)
			require.Equal(t, int64(1), used)
		})
	}
	t.Run("closed, poisoned or cancelled", func(t *testing.T) {
		f := fresh(t)
		// A done ctx never reaches the optimistic path: its callers send
		// it to the locked flow, which refuses it.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := f.s.AdmitCheck(ctx, stored)
		require.ErrorIs(t, err, context.Canceled)
		b, err := domain.NewBatch([]domain.Check{stored}, 1)
		require.NoError(t, err)
		require.ErrorIs(t, f.s.Admit(ctx, b), context.Canceled)
		k := stored.CounterKey()
		require.Equal(t, int64(1), f.sh.counter(must(f.sh.lookup(&k))).Used)

		f.sh.lockWriter()
		f.s.poison(0)
		f.sh.unlockWriter()
		done, _ := try(t, f, stored)
		require.False(t, done)

		g := fresh(t)
		g.s.closed.Store(true) // closed, its memory not yet released
		done, used := try(t, g, stored)
		require.False(t, done)
		require.Equal(t, int64(1), used)
	})
}
