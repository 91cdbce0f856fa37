package memory_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/conformance"
)

// TestConformance runs the shared suite on a single-shard store, where every
// capacity count is exact, and on a four-shard store, where a new key can be
// refused while other shards have room.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, shards := range []int{1, 4} {
		t.Run(map[int]string{1: "one_shard", 4: "four_shards"}[shards], func(t *testing.T) {
			t.Parallel()
			conformance.Run(t, func(t testing.TB, opts conformance.Options) conformance.Instance {
				clock := memory.NewManualClock()
				store, err := memory.New(memory.Config{
					MaxKeys:      shards * opts.Capacity,
					Shards:       shards,
					MaxBatchSize: opts.MaxBatchSize,
					Clock:        clock,
				})
				require.NoError(t, err)
				t.Cleanup(func() { _ = store.Close() })
				return conformance.Instance{
					Store:     store,
					Advance:   func(_ testing.TB, d time.Duration) { clock.Advance(d) },
					ExactTime: true,
				}
			})
		})
	}
}
