package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// naive is the baseline most services start with: one upsert per check,
// counting on the application's clock, with no batches, no capacity bound
// and no locks beyond the row's own. It consumes even when it denies.
type naive struct {
	pool   *pgxpool.Pool
	keys   [][][]byte // per caller, per key
	limit  int64
	window time.Duration
}

const sqlNaiveTable = `CREATE TABLE IF NOT EXISTS pgload_naive_windows (
    key               bytea       PRIMARY KEY,
    window_started_at timestamptz NOT NULL,
    window_expires_at timestamptz NOT NULL,
    used              bigint      NOT NULL
) WITH (fillfactor = 80)`

const sqlNaive = `INSERT INTO pgload_naive_windows AS w (key, window_started_at, window_expires_at, used)
VALUES ($1, $2, $3, 1)
ON CONFLICT (key) DO UPDATE SET
    used              = CASE WHEN w.window_expires_at <= $2 THEN 1  ELSE w.used + 1 END,
    window_started_at = CASE WHEN w.window_expires_at <= $2 THEN $2 ELSE w.window_started_at END,
    window_expires_at = CASE WHEN w.window_expires_at <= $2 THEN $3 ELSE w.window_expires_at END
RETURNING used`

func newNaive(pool *pgxpool.Pool, cell string, callers, keysPerCaller int) *naive {
	n := &naive{pool: pool, limit: 1 << 62, window: time.Hour}
	n.keys = make([][][]byte, callers)
	for c := range callers {
		for k := range keysPerCaller {
			sum := sha256.Sum256(fmt.Appendf(nil, "%s/caller-%d/key-%d", cell, c, k))
			n.keys[c] = append(n.keys[c], sum[:])
		}
	}
	return n
}

func (n *naive) check(ctx context.Context, caller, key int) (bool, error) {
	now := time.Now()
	var used int64
	err := n.pool.QueryRow(ctx, sqlNaive, n.keys[caller][key], now, now.Add(n.window)).Scan(&used)
	return used <= n.limit, err
}

// used sums the counters of this cell's keys and counts their rows.
func (n *naive) used(ctx context.Context) (sum, rows int64, err error) {
	var all [][]byte
	for _, ks := range n.keys {
		all = append(all, ks...)
	}
	err = n.pool.QueryRow(ctx, `SELECT COALESCE(sum(used), 0), count(*) FROM pgload_naive_windows WHERE key = ANY($1)`, all).
		Scan(&sum, &rows)
	return sum, rows, err
}
