package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

var testHasher = func() domain.KeyHasher {
	h, err := domain.NewKeyHasher([]byte("pgload tests: a fixed secret of 32+ bytes"))
	if err != nil {
		panic(err)
	}
	return h
}()

// setup returns a cell of callers callers on a database of its own, made
// as pgload makes one on the server of $RUNLIMIT_POSTGRES_TEST_DATABASE_URL
// or the local one and dropped when the test ends, with a pool of one
// connection more than the callers.
func setup(t *testing.T, callers int) cell {
	t.Helper()
	ctx := context.Background()
	name, dbURL, drop, err := createDatabase(ctx, defaultURL())
	require.NoError(t, err, "the test needs a PostgreSQL server that lets it create databases")
	t.Cleanup(drop)
	pool, err := openPool(ctx, dbURL, callers+1)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return cell{dbURL: dbURL, run: name, hasher: testHasher, callers: callers, pool: pool}
}

// The store and optimistic contenders are one store in its two modes. A
// session holding the advisory lock of a stored key blocks the locked
// protocol, which takes that lock first, and not the optimistic one, whose
// update of a stored counter takes none.
func TestStoreContendersAreTheStoresTwoModes(t *testing.T) {
	t.Parallel()
	for kind, optimistic := range map[string]bool{"store": false, "optimistic": true} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			c := setup(t, 1)
			ctx := context.Background()
			l, err := newLimiter(kind, c, 1)
			require.NoError(t, err)
			require.NoError(t, warmUp(ctx, l, 1, 1), "the key's row exists before the lock is taken")
			checks, err := cellChecks(c.hasher, cellTag(kind, 1), 1, 1)
			require.NoError(t, err)
			lockID := postgres.AdvisoryLockID(checks[0][0].CounterKey())

			holder, err := c.pool.Acquire(ctx)
			require.NoError(t, err)
			defer holder.Release()
			_, err = holder.Exec(ctx, "SELECT pg_catalog.pg_advisory_lock($1)", lockID)
			require.NoError(t, err)
			checkCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			allowed, err := l.check(checkCtx, 0, 0)
			cancel()
			_, unlockErr := holder.Exec(ctx, "SELECT pg_catalog.pg_advisory_unlock($1)", lockID)
			require.NoError(t, unlockErr)

			sum, rows, usedErr := l.used(ctx)
			require.NoError(t, usedErr)
			require.Equal(t, int64(1), rows, "one key, one row")
			if optimistic {
				require.NoError(t, err, "the optimistic update takes no advisory lock")
				require.True(t, allowed)
				require.Equal(t, int64(2), sum, "the warm-up's check and this one")
			} else {
				require.Error(t, err, "the locked protocol waits for the key's advisory lock")
				require.Equal(t, int64(1), sum, "and admits nothing")
			}
		})
	}
}

// A run of the floor and both store modes prints one row per limiter, the
// ratios of each mode to the floor and to each other, and writes the same
// rows as CSV.
func TestRunComparesBothStoreModes(t *testing.T) {
	t.Parallel()
	csvPath := filepath.Join(t.TempDir(), "pgload.csv")
	cfg := config{url: defaultURL(), csvPath: csvPath, duration: 300 * time.Millisecond, rounds: 1,
		callers: []int{8}, keysPerCaller: 2, limiters: []string{"floor", "store", "optimistic"}}
	var out strings.Builder
	require.NoError(t, run(context.Background(), cfg, &out))
	md := out.String()

	require.Contains(t, md, "| callers | limiter | admissions/s | p50 | p99 | client CPU/op | server CPU/op |\n|---:|---|---:|---:|---:|---:|---:|\n")
	require.Contains(t, md, "| 8 | postgres.Store, locked protocol (default) | ")
	require.Contains(t, md, "| 8 | postgres.Store, optimistic protocol | ")
	require.Contains(t, md, "| callers | store / floor | optimistic store / floor |")
	require.Contains(t, md, "Issue 14's bar is 0.85x the protocol floor")

	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	rows, err := benchcsv.ReadPG(f)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	for i, id := range []string{benchcsv.Floor, benchcsv.Store, benchcsv.Optimistic} {
		require.Equal(t, 8, rows[i].Callers)
		require.Equal(t, id, rows[i].Contender)
	}
}
