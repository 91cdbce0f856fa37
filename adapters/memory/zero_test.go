package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/ports"
)

// TestZeroStoreFailsClosed: a zero Store, which New did not build, used to
// panic in AdmitCheck (index out of range) and CleanupExpired (division by
// zero), and Admit reported a misleading batch-size error. It fails closed
// as a nil *Store does: ErrClosed after invalid input, consuming nothing.
func TestZeroStoreFailsClosed(t *testing.T) {
	t.Parallel()
	p := domain.MustPolicy("zero", "store", 5, time.Minute)
	h, err := domain.NewKeyHasher([]byte("memory zero-store test secret, 32+ bytes"))
	require.NoError(t, err)
	valid := domain.NewCheck(p, h.KeyString(p, "alice"))
	ctx := context.Background()
	var nilCtx context.Context

	stores := map[string]*memory.Store{"nil": nil, "zero": new(memory.Store)}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			batch := func() *domain.Batch {
				b, err := domain.NewBatch([]domain.Check{valid}, 0)
				require.NoError(t, err)
				return b
			}
			cases := []struct {
				name string
				call func() error
				want error
			}{
				{"Admit", func() error { return s.Admit(ctx, batch()) }, memory.ErrClosed},
				{"Admit nil batch", func() error { return s.Admit(ctx, nil) }, domain.ErrInvalidBatch},
				{"Admit nil ctx", func() error { return s.Admit(nilCtx, batch()) }, ports.ErrNilContext},
				{"AdmitCheck", func() error { _, err := s.AdmitCheck(ctx, valid); return err }, memory.ErrClosed},
				{"AdmitCheck zero check", func() error { _, err := s.AdmitCheck(ctx, domain.Check{}); return err }, domain.ErrInvalidCheck},
				{"AdmitCheck nil ctx", func() error { _, err := s.AdmitCheck(nilCtx, valid); return err }, ports.ErrNilContext},
				{"CleanupExpired", func() error { _, err := s.CleanupExpired(ctx, 8); return err }, memory.ErrClosed},
				{"CleanupExpired zero", func() error { _, err := s.CleanupExpired(ctx, 0); return err }, memory.ErrClosed},
				{"CleanupExpired negative", func() error { _, err := s.CleanupExpired(ctx, -1); return err }, memory.ErrNegativeMax},
				{"Stats", func() error { _, err := s.Stats(ctx); return err }, memory.ErrClosed},
				{"Stats nil ctx", func() error { _, err := s.Stats(nilCtx); return err }, ports.ErrNilContext},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					var err error
					require.NotPanics(t, func() { err = tc.call() })
					require.ErrorIs(t, err, tc.want)
					require.False(t, ports.MayHaveConsumedQuota(err))
				})
			}
			require.NotPanics(t, func() {
				require.Empty(t, s.PoisonedShards())
				require.Zero(t, s.RecoverPoisoned())
				require.NoError(t, s.Close())
				require.NoError(t, s.Close(), "twice")
				require.NotEmpty(t, s.String())
			})
		})
	}
}

// funcClock is a Clock that is a func, as a host may write one.
type funcClock func() time.Duration

func (f funcClock) Now() time.Duration { return f() }

// TestNilPointerClockIsAConfigError: a nil *ManualClock in Config.Clock
// used to be accepted and panic on the first check, and so did a nil func
// (which also poisoned the shard it held).
func TestNilPointerClockIsAConfigError(t *testing.T) {
	t.Parallel()
	var manual *memory.ManualClock
	var coarse *memory.CoarseClock
	var fn funcClock
	for _, c := range []memory.Clock{manual, coarse, fn} {
		_, err := memory.New(memory.Config{MaxKeys: 1, Clock: c})
		require.ErrorIs(t, err, memory.ErrInvalidConfig)
		var ce *memory.ConfigError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "Clock", ce.Field)
	}
	s, err := memory.New(memory.Config{MaxKeys: 1, Clock: nil})
	require.NoError(t, err, "a nil Clock is the default")
	require.NoError(t, s.Close())
}

// TestZeroValuesPrint: nil and zero values of the package's types print
// under every printer without panicking.
func TestZeroValuesPrint(t *testing.T) {
	t.Parallel()
	leakcheck.CheckPrintable(t, "nil *Store", (*memory.Store)(nil))
	leakcheck.CheckPrintable(t, "zero Store", &memory.Store{})
	leakcheck.CheckPrintable(t, "zero Config", memory.Config{})
	leakcheck.CheckPrintable(t, "zero OpError", &memory.OpError{})
	leakcheck.CheckPrintable(t, "zero ConfigError", &memory.ConfigError{})
	leakcheck.CheckPrintable(t, "zero PoisonedShardError", &memory.PoisonedShardError{})
	leakcheck.CheckPrintable(t, "zero ShardOverflowError", &memory.ShardOverflowError{})
}

// TestZeroCoarseClock: a CoarseClock that NewCoarseClock did not start
// used to be accepted as Config.Clock and panic on the first check, and
// its Stop panicked.
func TestZeroCoarseClock(t *testing.T) {
	t.Parallel()
	_, err := memory.New(memory.Config{MaxKeys: 1, Clock: &memory.CoarseClock{}})
	require.ErrorIs(t, err, memory.ErrInvalidConfig)
	var ce *memory.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Clock", ce.Field)
	require.NotPanics(t, func() {
		(&memory.CoarseClock{}).Stop()
		(*memory.CoarseClock)(nil).Stop()
	})
	// Its Now, which panicked with a nil dereference, reads a clock that
	// never started.
	require.NotPanics(t, func() {
		require.Zero(t, (&memory.CoarseClock{}).Now())
		require.Zero(t, (*memory.CoarseClock)(nil).Now())
	})
}
