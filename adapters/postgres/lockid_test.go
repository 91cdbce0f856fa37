package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// The advisory lock id, computed independently by PostgreSQL's own sha256.
func TestAdvisoryLockIDMatchesTheProtocol(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "lock.id", 5, time.Hour)
	for _, subject := range []string{"a", "b", "user@example.test"} {
		k := f.check(p, subject).CounterKey()
		kb := k.Bytes()
		var want int64
		require.NoError(t, f.db.Pool.QueryRow(context.Background(), `SELECT ('x' || encode(substr(
			sha256(convert_to('runlimit/postgres-advisory-lock/v1', 'UTF8') || '\x00'::bytea || $1::bytea), 1, 8), 'hex'))::bit(64)::bigint`,
			kb[:]).Scan(&want))
		require.Equal(t, want, postgres.AdvisoryLockID(k), subject)
	}
}

// The shard, computed by the ledger trigger's expression.
func TestShardOfMatchesTheLedger(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "shard", 5, time.Hour)
	for _, subject := range []string{"a", "b", "c", "d"} {
		c := f.check(p, subject)
		requireAllowed(t, admit(t, f.store, c))
		kb := c.CounterKey().Bytes()
		var shard int
		require.NoError(t, f.db.Pool.QueryRow(context.Background(),
			"SELECT get_byte($1, 0) # get_byte($2, 0)", kb[:32], kb[32:]).Scan(&shard))
		require.Equal(t, shard, postgres.ShardOf(c.CounterKey()))
		require.Positive(t, f.ledger(t, shard))
	}
}
