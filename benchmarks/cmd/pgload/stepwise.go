package main

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

// stepwise runs the admission protocol of SPEC section 5 for one check, one
// statement per step and one round trip per statement: begin, timeouts,
// advisory lock, row lock, ledger lock, clock, write, commit. It is what the
// protocol costs written plainly; the store sends the same steps as four
// statements in two pipelined round trips.
type stepwise struct {
	pool         *pgxpool.Pool
	checks       [][]domain.Check
	rowsPerShard int64
	timeout      time.Duration
}

const (
	// The store's settings, planner choices included, so that the baseline
	// differs from the store only in how its statements travel.
	sqlStepTimeouts = `SELECT pg_catalog.set_config('statement_timeout', $1, true),
       pg_catalog.set_config('lock_timeout', $1, true),
       pg_catalog.set_config('idle_in_transaction_session_timeout', $1, true),
       pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true),
       pg_catalog.set_config('enable_seqscan', 'off', true)`
	sqlStepLock = `SELECT pg_catalog.pg_advisory_xact_lock($1)`
	sqlStepRow  = `SELECT used, window_started_at, window_expires_at FROM runlimit_fixed_windows
WHERE config_fingerprint = $1 AND subject_key = $2 FOR UPDATE`
	sqlStepLedger = `SELECT row_count FROM runlimit_capacity_shards
WHERE capacity_shard = $3 AND NOT EXISTS (
    SELECT FROM runlimit_fixed_windows WHERE config_fingerprint = $1 AND subject_key = $2)
FOR UPDATE`
	sqlStepClock  = `SELECT pg_catalog.clock_timestamp()`
	sqlStepUpdate = `UPDATE runlimit_fixed_windows SET used = $3, window_started_at = $4, window_expires_at = $5
WHERE config_fingerprint = $1 AND subject_key = $2`
	sqlStepInsert = `INSERT INTO runlimit_fixed_windows
    (policy_id, scope_id, config_fingerprint, subject_key, window_started_at, window_expires_at, used)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
)

func (s *stepwise) check(ctx context.Context, caller, key int) (allowed bool, err error) {
	c := s.checks[caller][key]
	b, err := domain.NewBatch([]domain.Check{c}, 1)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release() // a connection left in a transaction is destroyed
	k := c.CounterKey()
	kb := k.Bytes()
	fp, sk := kb[:32], kb[32:]

	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL READ COMMITTED"); err != nil {
		return false, err
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	budget := strconv.FormatInt(s.timeout.Milliseconds(), 10) + "ms"
	if _, err := conn.Exec(ctx, sqlStepTimeouts, budget); err != nil {
		return false, err
	}
	if _, err := conn.Exec(ctx, sqlStepLock, postgres.AdvisoryLockID(k)); err != nil {
		return false, err
	}
	var obs domain.Observation
	var start, expires time.Time
	err = conn.QueryRow(ctx, sqlStepRow, fp, sk).Scan(&obs.Counter.Used, &start, &expires)
	present := err == nil
	switch {
	case present:
		obs.Counter.Start, obs.Counter.Expires = domain.InstantFromTime(start), domain.InstantFromTime(expires)
	case !errors.Is(err, pgx.ErrNoRows):
		return false, err
	}
	var rows int64
	err = conn.QueryRow(ctx, sqlStepLedger, fp, sk, int16(postgres.ShardOf(k))).Scan(&rows)
	switch {
	case err == nil:
		obs.Full = rows >= s.rowsPerShard
	case !errors.Is(err, pgx.ErrNoRows):
		return false, err
	}
	var now time.Time
	if err := conn.QueryRow(ctx, sqlStepClock).Scan(&now); err != nil {
		return false, err
	}
	b.Observe(0, obs)
	commit, err := b.Evaluate(domain.InstantFromTime(now))
	if err != nil || !commit {
		return false, err
	}
	next := b.Next(0)
	if present {
		_, err = conn.Exec(ctx, sqlStepUpdate, fp, sk, next.Used, next.Start.Time(), next.Expires.Time())
	} else {
		p := c.Policy()
		_, err = conn.Exec(ctx, sqlStepInsert, p.ID().String(), p.Scope().String(), fp, sk,
			next.Start.Time(), next.Expires.Time(), next.Used)
	}
	if err != nil {
		return false, err
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return false, err
	}
	committed = true
	return true, nil
}
