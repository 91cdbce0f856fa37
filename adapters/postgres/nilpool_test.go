package postgres_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
)

// A nil pool's error reads as one sentence, with one "runlimit:" prefix,
// and says where a pool comes from.
func TestNewNilPoolMessage(t *testing.T) {
	t.Parallel()
	_, err := postgres.New(nil, postgres.Config{})
	require.ErrorIs(t, err, postgres.ErrNilPool)
	require.ErrorIs(t, err, postgres.ErrInvalidConfig)
	require.Equal(t, 1, strings.Count(err.Error(), "runlimit:"), err.Error())
	require.Contains(t, err.Error(), "pgxpool.New")
}
