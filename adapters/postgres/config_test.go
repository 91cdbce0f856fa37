package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/internal/pgtest"
)

func TestNewAppliesDefaults(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s, err := postgres.New(db.Pool, postgres.Config{})
	require.NoError(t, err)
	require.Equal(t, postgres.Config{
		Schema:           "public",
		RowsPerShard:     4096,
		MaxBatchSize:     32,
		AcquireTimeout:   3 * time.Second,
		OperationTimeout: 3 * time.Second,
	}, s.Config())
	require.Equal(t, "postgres.Store{Schema: \"public\", RowsPerShard: 4096, MaxBatchSize: 32, AcquireTimeout: 3s, OperationTimeout: 3s}", s.String())

	limits := postgres.Config{Schema: "Limits_2", RowsPerShard: 65536, MaxBatchSize: 256, AcquireTimeout: time.Minute, OperationTimeout: time.Minute}
	s, err = postgres.New(db.Pool, limits)
	require.NoError(t, err)
	require.Equal(t, limits, s.Config())
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	tests := []struct {
		cfg   postgres.Config
		field string
	}{
		{postgres.Config{Schema: "pg_temp"}, "Schema"},
		{postgres.Config{Schema: "a.b"}, "Schema"},
		{postgres.Config{Schema: `a"b`}, "Schema"},
		{postgres.Config{RowsPerShard: -1}, "RowsPerShard"},
		{postgres.Config{RowsPerShard: 65537}, "RowsPerShard"},
		{postgres.Config{MaxBatchSize: -1}, "MaxBatchSize"},
		{postgres.Config{MaxBatchSize: 257}, "MaxBatchSize"},
		{postgres.Config{AcquireTimeout: -time.Nanosecond}, "AcquireTimeout"},
		{postgres.Config{AcquireTimeout: time.Minute + time.Nanosecond}, "AcquireTimeout"},
		{postgres.Config{OperationTimeout: -time.Second}, "OperationTimeout"},
		{postgres.Config{OperationTimeout: 2 * time.Minute}, "OperationTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			_, err := postgres.New(db.Pool, tt.cfg)
			require.ErrorIs(t, err, postgres.ErrInvalidConfig)
			var ce *postgres.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tt.field, ce.Field)
			require.Contains(t, err.Error(), tt.field)
		})
	}
	_, err := postgres.New(nil, postgres.Config{})
	require.ErrorIs(t, err, postgres.ErrNilPool)
}
