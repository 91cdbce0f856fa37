package memory_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/conformance"
)

// TestConformance runs the shared suite on a single-shard store, where
// every key shares one lock and one capacity partition, and on a
// four-shard store, where the suite aims keys at shards through ShardOf.
// The store reads the suite's clock, so the suite also holds admissions
// inside their critical sections to force races and lock-order deadlocks.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, shards := range []int{1, 4} {
		t.Run(map[int]string{1: "one_shard", 4: "four_shards"}[shards], func(t *testing.T) {
			t.Parallel()
			conformance.Run(t, func(t testing.TB, opts conformance.Options) conformance.Instance {
				clock := new(conformance.ManualClock)
				store, err := memory.New(memory.Config{
					MaxKeys:      shards * opts.Capacity,
					Shards:       shards,
					MaxBatchSize: opts.MaxBatchSize,
					Clock:        clock,
				})
				require.NoError(t, err)
				t.Cleanup(func() { _ = store.Close() })
				return conformance.Instance{
					Store:       store,
					Clock:       clock,
					PartitionOf: store.ShardOf,
					Require: []conformance.Capability{
						conformance.CheckAdmitter, conformance.Cleaner, conformance.StatsReporter, conformance.Closer,
					},
				}
			})
		})
	}
}
