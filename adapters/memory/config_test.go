package memory_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

func TestNewRejectsConfigOutOfBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cfg   memory.Config
		field string
		value int
	}{
		{"MaxKeys zero", memory.Config{}, "MaxKeys", 0},
		{"MaxKeys negative", memory.Config{MaxKeys: -1}, "MaxKeys", -1},
		{"Shards negative", memory.Config{MaxKeys: 4, Shards: -1}, "Shards", -1},
		{"Shards above MaxKeys", memory.Config{MaxKeys: 4, Shards: 5}, "Shards", 5},
		{"Shards above MaxShards", memory.Config{MaxKeys: 1 << 20, Shards: memory.MaxShards + 1}, "Shards", memory.MaxShards + 1},
		{"CleanupPerCheck negative", memory.Config{MaxKeys: 4, CleanupPerCheck: -1}, "CleanupPerCheck", -1},
		{"MaxBatchSize negative", memory.Config{MaxKeys: 4, MaxBatchSize: -1}, "MaxBatchSize", -1},
	}
	// Where int has 32 bits, no MaxKeys exceeds MaxShardCapacity. The sums
	// are computed at run time, so that they compile there too.
	if strconv.IntSize == 64 {
		capacity := memory.MaxShardCapacity
		tests = append(tests, []struct {
			name  string
			cfg   memory.Config
			field string
			value int
		}{
			{"shard capacity above MaxShardCapacity", memory.Config{MaxKeys: capacity + 1}, "MaxKeys", capacity + 1},
			{"largest of two shards above MaxShardCapacity", memory.Config{MaxKeys: 2*capacity + 1, Shards: 2}, "MaxKeys", 2*capacity + 1},
		}...)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store, err := memory.New(tt.cfg)
			require.Nil(t, store)
			require.ErrorIs(t, err, memory.ErrInvalidConfig)
			var ce *memory.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tt.field, ce.Field)
			require.Equal(t, tt.value, ce.Value)
			require.Contains(t, err.Error(), tt.field)
			require.False(t, ports.MayHaveConsumedQuota(err))
		})
	}
}

func TestNewAcceptsConfigAtItsBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cfg    memory.Config
		shards int
	}{
		{"one key", memory.Config{MaxKeys: 1}, 1},
		{"Shards zero means one", memory.Config{MaxKeys: 4, Shards: 0}, 1},
		{"Shards equal to MaxKeys", memory.Config{MaxKeys: 4, Shards: 4}, 4},
		{"Shards at MaxShards", memory.Config{MaxKeys: memory.MaxShards, Shards: memory.MaxShards}, memory.MaxShards},
		// Storage grows on demand, so a huge bound costs nothing up front.
		{"one shard at MaxShardCapacity", memory.Config{MaxKeys: memory.MaxShardCapacity}, 1},
		{"CleanupPerCheck one", memory.Config{MaxKeys: 4, CleanupPerCheck: 1}, 1},
		{"MaxBatchSize one", memory.Config{MaxKeys: 4, MaxBatchSize: 1}, 1},
	}
	if strconv.IntSize == 64 { // see TestNewRejectsConfigOutOfBounds
		capacity := memory.MaxShardCapacity
		tests = append(tests, struct {
			name   string
			cfg    memory.Config
			shards int
		}{"two shards at MaxShardCapacity", memory.Config{MaxKeys: 2 * capacity, Shards: 2}, 2})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store, err := memory.New(tt.cfg)
			require.NoError(t, err)
			st, err := store.Stats(context.Background())
			require.NoError(t, err)
			require.Equal(t, int64(tt.cfg.MaxKeys), st.Capacity)
			require.Equal(t, tt.shards, st.Shards)
			require.Len(t, st.Headroom, tt.shards)
			require.Equal(t, int64(0), st.Entries)
		})
	}
}

func TestCleanupPerCheckDefaultsToEight(t *testing.T) {
	t.Parallel()
	f := setup(t, memory.Config{MaxKeys: 20})
	p := policy(1, time.Second)
	for _, c := range f.onShard(t, p, 0, 10) {
		f.allow(t, c)
	}
	f.clock.Advance(time.Second)
	f.allow(t, f.check(p, "newcomer"))
	// Ten expired entries, eight removed by the check, one added.
	require.Equal(t, int64(3), f.stats(t).Entries)
}

func TestMaxBatchSizeBoundsAdmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		max  int
		want int // the bound Admit enforces
	}{
		{"default", 0, domain.DefaultMaxBatchSize},
		{"explicit", 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, memory.Config{MaxKeys: 100, MaxBatchSize: tt.max})
			p := policy(10, time.Minute)
			checks := make([]domain.Check, tt.want+1)
			for i := range checks {
				checks[i] = f.check(p, "subject-"+string(rune('A'+i)))
			}
			bd, err := f.limiter.CheckAll(context.Background(), checks[:tt.want])
			require.NoError(t, err)
			require.Equal(t, domain.Allowed, bd.Outcome())

			_, err = f.limiter.CheckAll(context.Background(), checks)
			var be *domain.BatchError
			require.ErrorAs(t, err, &be)
			require.Equal(t, domain.BatchTooLarge, be.Problem)
			require.Equal(t, tt.want+1, be.Size)
			require.Equal(t, tt.want, be.Max)
			require.ErrorIs(t, err, domain.ErrInvalidInput)
			require.False(t, ports.MayHaveConsumedQuota(err))
		})
	}
}

func TestNilClockDefaultsToTheMonotonicClock(t *testing.T) {
	t.Parallel()
	store, err := memory.New(memory.Config{MaxKeys: 4})
	require.NoError(t, err)
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	require.NoError(t, err)
	p := policy(2, domain.MaxWindow)
	c := domain.NewCheck(p, newHasher(t).KeyString(p, "subject"))
	d, err := limiter.Check(context.Background(), c)
	require.NoError(t, err)
	a, ok := d.Allowance()
	require.True(t, ok)
	// A new window lasts exactly its length, whatever the clock reads.
	require.Equal(t, domain.MaxWindow, a.ResetAfter)
	d, err = limiter.Check(context.Background(), c)
	require.NoError(t, err)
	a, ok = d.Allowance()
	require.True(t, ok)
	// The real clock moved on by some whole milliseconds: the same window
	// cannot have more time left.
	require.LessOrEqual(t, a.ResetAfter, domain.MaxWindow)
	require.Zero(t, a.ResetAfter%time.Millisecond)
	require.Equal(t, int64(0), a.Remaining)
}
