package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

// mixed is one database served by the store's two modes at once, as
// replicas of either mode, an older replica or a Rust service share it:
// single checks through the optimistic protocol, single checks through the
// locked one, and batches of two (always the locked protocol).
type mixed struct {
	optimistic, locked *postgres.Store
}

func (f *fixture) mixed(t *testing.T, cfg postgres.Config) mixed {
	t.Helper()
	pool := func(c *pgxpool.Config) { c.MaxConns = 4 }
	cfg.Protocol = postgres.Optimistic
	optimistic, _ := f.newStore(t, cfg, pool)
	cfg.Protocol = postgres.Locked
	locked, _ := f.newStore(t, cfg, pool)
	return mixed{optimistic: optimistic, locked: locked}
}

// via names the ways a racer of the tests below admits.
type via int

const (
	viaOptimistic via = iota
	viaLocked
	viaBatch
	viaCount
)

// admit runs one admission of checks (one, or two for a batch) the racer's
// way and reports whether it was allowed, or the reason it was denied.
func (m mixed) admit(v via, checks ...domain.Check) (bool, domain.DenialReason, error) {
	ctx := context.Background()
	if v == viaBatch {
		d, err := tryAdmit(ctx, m.optimistic, checks...)
		if err != nil {
			return false, 0, err
		}
		if _, denial, ok := d.Denied(); ok {
			return false, denial.Reason(), nil
		}
		return d.Outcome() == domain.Allowed, 0, nil
	}
	store := m.optimistic
	if v == viaLocked {
		store = m.locked
	}
	d, err := store.AdmitCheck(ctx, checks[0])
	if err != nil {
		return false, 0, err
	}
	if denial, ok := d.Denial(); ok {
		return false, denial.Reason(), nil
	}
	return d.Outcome() == domain.Allowed, 0, nil
}

// Optimistic single checks, locked single checks and batches racing on one
// key, on one database, admit exactly its limit and lose no update: every
// batch that was allowed counted its companion key too, and no other did.
func TestMixedProtocolsAdmitExactlyTheLimit(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	m := f.mixed(t, postgres.Config{})
	const limit, racers, each = 40, 9, 8
	p := policy(t, "mixed.hot", limit, time.Hour)
	hot := f.check(p, "hot")

	type result struct {
		allowed int
		err     error
	}
	results := make([]result, racers)
	companions := make([]domain.Check, racers)
	var wg sync.WaitGroup
	for i := range racers {
		v := via(i % int(viaCount))
		companions[i] = f.check(p, fmt.Sprintf("companion-%d", i))
		wg.Go(func() {
			r := &results[i]
			for range each {
				checks := []domain.Check{hot}
				if v == viaBatch {
					checks = append(checks, companions[i])
				}
				ok, _, err := m.admit(v, checks...)
				if err != nil {
					r.err = err
					return
				}
				if ok {
					r.allowed++
				}
			}
		})
	}
	wg.Wait()

	allowed := 0
	for i, r := range results {
		require.NoError(t, r.err, "racer %d", i)
		allowed += r.allowed
		if via(i%int(viaCount)) == viaBatch {
			got, ok := f.stored(t, companions[i])
			if r.allowed == 0 {
				require.False(t, ok, "racer %d: a denied batch counted its companion", i)
				continue
			}
			require.True(t, ok, "racer %d", i)
			require.Equal(t, int64(r.allowed), got.Used, "racer %d: its companion counts its allowed batches", i)
		}
	}
	require.Equal(t, limit, allowed, "%d admissions of %d racing on a key whose limit is %d", allowed, racers*each, limit)
	f.requireUsed(t, []domain.Check{hot}, limit)
}

// New keys racing for the last slots of one capacity shard, through both
// modes and batches, while cleanup frees the shard's expired rows, never
// take more slots than the shard has: every key admitted has its row, every
// key refused was refused for storage capacity and has none, the ledger
// matches the table, and the shard never holds more than its bound.
func TestMixedProtocolsNewKeysRaceForTheLastSlots(t *testing.T) {
	t.Parallel()
	const (
		bound   = 8
		shard   = 77
		expired = 3 // rows cleanup may free during the race
		live    = 3 // rows that stay
		racers  = 12
	)
	f := setup(t, postgres.Config{RowsPerShard: bound})
	m := f.mixed(t, postgres.Config{RowsPerShard: bound})
	ctx := context.Background()
	old := f.checksInShard(t, policy(t, "mixed.old", 1, time.Minute), shard, expired)
	for _, c := range old {
		requireAllowed(t, admit(t, f.store, c))
	}
	shift(t, f.db.Pool, time.Hour)
	for _, c := range f.checksInShard(t, policy(t, "mixed.live", 1, time.Hour), shard, live) {
		requireAllowed(t, admit(t, f.store, c))
	}
	// Each racer has its own new key, a batch racer two.
	fresh := f.checksInShard(t, policy(t, "mixed.new", 1, time.Hour), shard, racers+racers/int(viaCount))

	type result struct {
		allowed bool
		reason  domain.DenialReason
		err     error
	}
	results := make([]result, racers)
	keys := make([][]domain.Check, racers)
	var (
		wg      sync.WaitGroup
		removed int
		cleaned error
	)
	next := 0
	for i := range racers {
		n := 1
		if via(i%int(viaCount)) == viaBatch {
			n = 2
		}
		keys[i], next = fresh[next:next+n], next+n
	}
	wg.Go(func() {
		for range 3 {
			n, err := m.optimistic.CleanupExpired(ctx, 1)
			if err != nil {
				cleaned = err
				return
			}
			removed += n
		}
	})
	for i := range racers {
		wg.Go(func() {
			r := &results[i]
			r.allowed, r.reason, r.err = m.admit(via(i%int(viaCount)), keys[i]...)
		})
	}
	wg.Wait()

	require.NoError(t, cleaned)
	admitted := 0
	for i, r := range results {
		require.NoError(t, r.err, "racer %d", i)
		if r.allowed {
			f.requireUsed(t, keys[i], 1)
			admitted += len(keys[i])
			continue
		}
		require.Equal(t, domain.StorageCapacity, r.reason, "racer %d", i)
		f.requireAbsent(t, keys[i])
	}
	rows := f.ledger(t, shard)
	require.Equal(t, int64(expired-removed+live+admitted), rows)
	require.LessOrEqual(t, rows, int64(bound))
	// A single check is refused only while the shard is full, and cleanup
	// only makes room: the slots free from the start were all taken.
	require.GreaterOrEqual(t, admitted, bound-expired-live, "the slots free from the start were taken")
}
