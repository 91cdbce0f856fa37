package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/migrations"
)

// A connection whose server session dropped the store's prepared
// statements (what a pooler in transaction pooling mode does to the next
// transaction, and what host code running DISCARD ALL or DEALLOCATE ALL on
// a pooled connection does) fails the admission closed, consuming nothing,
// with an error that matches ErrPooler and names the likely cause;
// the connection is replaced, and the next admission is served.
func TestDroppedStatementsFailClosedNamingThePooler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, reset := range []string{"DISCARD ALL", "DEALLOCATE ALL"} {
		for _, proto := range []postgres.Protocol{postgres.Locked, postgres.Optimistic} {
			for _, size := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/%v/batch of %d", reset, proto, size), func(t *testing.T) {
					t.Parallel()
					f := setup(t, postgres.Config{})
					store, pool := f.newStore(t, postgres.Config{Protocol: proto}, func(c *pgxpool.Config) { c.MaxConns = 1 })
					p := policy(t, "dropped", 10, time.Hour)
					checks := make([]domain.Check, size)
					for i := range checks {
						checks[i] = f.check(p, fmt.Sprintf("subject-%d", i))
					}
					requireAllowed(t, admit(t, store, checks...))

					conn, err := pool.Acquire(ctx)
					require.NoError(t, err)
					require.True(t, store.IsWarm(conn))
					_, err = conn.Conn().PgConn().Exec(ctx, reset).ReadAll()
					require.NoError(t, err)
					conn.Release()

					_, err = tryAdmit(ctx, store, checks...)
					var ae *postgres.AdmissionError
					require.ErrorAs(t, err, &ae)
					require.False(t, ae.MayHaveConsumed, "%v", err)
					require.ErrorIs(t, err, postgres.ErrPooler)
					require.NotErrorIs(t, err, postgres.ErrTimeout)
					requirePoolerHint(t, err)
					for _, c := range checks {
						counter, ok := f.stored(t, c)
						require.True(t, ok)
						require.Equal(t, int64(1), counter.Used, "the failed admission consumed")
					}

					requireAllowed(t, admit(t, store, checks...))
					for _, c := range checks {
						counter, _ := f.stored(t, c)
						require.Equal(t, int64(2), counter.Used)
					}
				})
			}
		}
	}
}

// A connection the store has not prepared whose server session already
// holds a statement under one of the store's names (what a pooler in
// transaction pooling mode hands a client when another client's warm-up
// prepared them on that server connection) fails the warm-up closed with
// an error that matches ErrPooler and names the likely cause; Ready
// says the same.
func TestForeignStatementsFailTheWarmUpNamingThePooler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, postgres.Config{})
	store, pool := f.newStore(t, postgres.Config{}, func(c *pgxpool.Config) { c.MaxConns = 1 })
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	require.False(t, store.IsWarm(conn))
	// The store's statement names: runlimit_, a tag of the schema, and
	// the statement's own name; the first it prepares is read_one.
	sum := sha256.Sum256([]byte(migrations.DefaultSchema))
	name := "runlimit_" + hex.EncodeToString(sum[:4]) + "_read_one"
	_, err = conn.Conn().PgConn().Exec(ctx, "PREPARE "+name+" AS SELECT 1").ReadAll()
	require.NoError(t, err)
	conn.Release()

	p := policy(t, "foreign", 10, time.Hour)
	c := f.check(p, "subject")
	_, err = tryAdmit(ctx, store, c)
	var ae *postgres.AdmissionError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, postgres.OpAcquire, ae.Op)
	require.False(t, ae.MayHaveConsumed)
	require.ErrorIs(t, err, postgres.ErrPooler)
	requirePoolerHint(t, err)
	_, ok := f.stored(t, c)
	require.False(t, ok)

	err = store.Ready(ctx)
	var me *postgres.MaintenanceError
	require.ErrorAs(t, err, &me)
	require.ErrorIs(t, err, postgres.ErrPooler)
	requirePoolerHint(t, err)
}

// Only the errors of a session that did not keep the store's statements,
// and PgBouncer's refusals of a transaction in statement pooling mode and
// of a startup parameter, match ErrPooler and carry a hint.
func TestPoolerHintOnlyForPoolerErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code, message string
		hinted        bool
		says          string
	}{
		{"26000", `prepared statement "runlimit_[hex]_begin" does not exist`, true, "transaction pooling"},
		{"42P05", `prepared statement "runlimit_[hex]_read_one" already exists`, true, "transaction pooling"},
		{"08P01", "transaction blocks not allowed in statement pooling mode", true, "statement pooling (PgBouncer pool_mode=statement) forbids transactions"},
		{"08P01", "unsupported startup parameter: search_path", true, "list it in PgBouncer's ignore_startup_parameters"},
		{"08P01", "invalid frontend message type 0", false, ""},
		{"57014", "canceling statement due to user request", false, ""},
		{"42P01", `relation "runlimit_fixed_windows" does not exist`, false, ""},
		{"", "conn closed", false, ""},
	} {
		dbErr := &postgres.DatabaseError{Code: tc.code, Message: tc.message}
		for _, err := range []error{
			&postgres.AdmissionError{Op: postgres.OpLock, Err: dbErr},
			&postgres.MaintenanceError{Op: "ready", Err: dbErr},
		} {
			require.Equal(t, tc.hinted, isPooler(err), "%s %s", tc.code, tc.message)
			if tc.hinted {
				require.Contains(t, err.Error(), tc.says)
			} else {
				require.NotContains(t, err.Error(), "pool_mode")
			}
		}
	}
}

func isPooler(err error) bool {
	ae, ok := err.(*postgres.AdmissionError)
	if ok {
		return ae.Is(postgres.ErrPooler)
	}
	return err.(*postgres.MaintenanceError).Is(postgres.ErrPooler)
}

// requirePoolerHint requires err's text to name the likely causes of a
// session that lost the store's prepared statements and what to do.
func requirePoolerHint(t *testing.T, err error) {
	t.Helper()
	for _, want := range []string{
		"prepared statements",
		"transaction pooling",
		"PgBouncer 1.21 or later with max_prepared_statements > 0",
		"DISCARD ALL or DEALLOCATE",
		"use session pooling (pool_mode=session) or a direct connection",
		// The advice for the other cause: a host that resets the
		// connections of a pool it shares with the store, with no pooler
		// at all, must not be told only to connect directly.
		"and keep host code from resetting the connections the store uses",
	} {
		require.Contains(t, err.Error(), want)
	}
}
