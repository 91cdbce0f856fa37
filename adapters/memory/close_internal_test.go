package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// Close releases every shard's storage: no entry, index, chunk or heap
// survives it, so no key bytes stay reachable from a closed store.
func TestCloseReleasesEveryShard(t *testing.T) {
	t.Parallel()
	s, err := New(Config{MaxKeys: 64, Shards: 4, Clock: NewManualClock()})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("close-test-secret-of-32-bytes!!!"))
	require.NoError(t, err)
	p := domain.MustPolicy("test.close", "subject", 1, time.Minute)
	for i := range 40 {
		_, err := s.AdmitCheck(context.Background(), domain.NewCheck(p, hasher.KeyString(p, fmt.Sprint(i))))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	for i := range s.shards {
		sh := &s.shards[i]
		require.Zero(t, sh.len(), "shard %d", i)
		require.Nil(t, sh.index.arr.Load(), "shard %d", i)
		for c := range sh.chunks {
			require.Nil(t, sh.chunks[c].Load(), "shard %d chunk %d", i, c)
		}
		require.Nil(t, sh.heap, "shard %d", i)
		require.Nil(t, sh.free, "shard %d", i)
		require.Zero(t, sh.slots, "shard %d", i)
	}
}
