package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/ports"
)

// TestUnbuiltStoreFailsClosed: a nil *Store and a zero Store, which New
// did not build, used to panic in every operation. They report invalid
// input as such and otherwise fail closed like a closed store. No
// database is needed: there is no pool to reach.
func TestUnbuiltStoreFailsClosed(t *testing.T) {
	t.Parallel()
	p := domain.MustPolicy("unbuilt", "s", 5, time.Minute)
	h, err := domain.NewKeyHasher([]byte("runlimit postgres store tests, 32+ bytes of secret"))
	require.NoError(t, err)
	valid := domain.NewCheck(p, h.KeyString(p, "alice"))
	ctx := context.Background()
	var nilCtx context.Context

	stores := map[string]*postgres.Store{"nil": nil, "zero": new(postgres.Store)}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cases := []struct {
				name string
				call func() error
				want error
			}{
				{"Admit", func() error {
					b, err := domain.NewBatch([]domain.Check{valid}, 0)
					require.NoError(t, err)
					return s.Admit(ctx, b)
				}, postgres.ErrClosed},
				{"Admit nil batch", func() error { return s.Admit(ctx, nil) }, domain.ErrInvalidBatch},
				{"Admit nil ctx", func() error {
					b, err := domain.NewBatch([]domain.Check{valid}, 0)
					require.NoError(t, err)
					return s.Admit(nilCtx, b)
				}, ports.ErrNilContext},
				{"AdmitCheck", func() error { _, err := s.AdmitCheck(ctx, valid); return err }, ports.ErrClosed},
				{"AdmitCheck zero check", func() error { _, err := s.AdmitCheck(ctx, domain.Check{}); return err }, domain.ErrInvalidCheck},
				{"AdmitCheck nil ctx", func() error { _, err := s.AdmitCheck(nilCtx, valid); return err }, ports.ErrNilContext},
				{"CleanupExpired", func() error { _, err := s.CleanupExpired(ctx, 10); return err }, ports.ErrClosed},
				{"CleanupExpired negative", func() error { _, err := s.CleanupExpired(ctx, -1); return err }, ports.ErrNegativeMax},
				{"CleanupExpired nil ctx", func() error { _, err := s.CleanupExpired(nilCtx, 1); return err }, ports.ErrNilContext},
				{"Stats", func() error { _, err := s.Stats(ctx); return err }, ports.ErrClosed},
				{"Stats nil ctx", func() error { _, err := s.Stats(nilCtx); return err }, ports.ErrNilContext},
				{"TableStats", func() error { _, err := s.TableStats(ctx); return err }, ports.ErrClosed},
				{"TableStats nil ctx", func() error { _, err := s.TableStats(nilCtx); return err }, ports.ErrNilContext},
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
				require.NoError(t, s.Close())
				require.NoError(t, s.Close(), "twice")
				_ = s.Config()
				require.NotEmpty(t, s.String())
				require.NotEmpty(t, fmt.Sprintf("%v %+v %#v", s, s, s))
			})
		})
	}
}

// TestNilContextOnALiveStore: a nil context is invalid input on an open
// store too, reported before a connection is taken, where ctx.Err used to
// panic. The store stays usable and nothing is consumed.
func TestNilContextOnALiveStore(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "nilctx", 1, time.Hour)
	c := f.check(p, "alice")
	var nilCtx context.Context

	var err error
	require.NotPanics(t, func() { _, err = f.store.AdmitCheck(nilCtx, c) })
	require.ErrorIs(t, err, ports.ErrNilContext)
	require.ErrorIs(t, err, domain.ErrInvalidInput)
	require.False(t, ports.MayHaveConsumedQuota(err))
	b, err := domain.NewBatch([]domain.Check{c}, 0)
	require.NoError(t, err)
	require.NotPanics(t, func() { err = f.store.Admit(nilCtx, b) })
	require.ErrorIs(t, err, ports.ErrNilContext)
	require.NotPanics(t, func() { _, err = f.store.CleanupExpired(nilCtx, 1) })
	require.ErrorIs(t, err, ports.ErrNilContext)
	require.NotPanics(t, func() { _, err = f.store.Stats(nilCtx) })
	require.ErrorIs(t, err, ports.ErrNilContext)
	require.NotPanics(t, func() { _, err = f.store.TableStats(nilCtx) })
	require.ErrorIs(t, err, ports.ErrNilContext)

	_, ok := f.stored(t, c)
	require.False(t, ok, "nothing was consumed")
	d, err := f.store.AdmitCheck(context.Background(), c)
	require.NoError(t, err)
	require.True(t, d.PermitsRequest())
}

// TestClosedStoreTwice: Close twice is harmless, and every operation after
// it fails closed with ErrClosed, without a connection.
func TestClosedStoreTwice(t *testing.T) {
	t.Parallel()
	f := setup(t, postgres.Config{})
	p := policy(t, "closed", 1, time.Hour)
	require.NoError(t, f.store.Close())
	require.NoError(t, f.store.Close())
	_, err := f.store.AdmitCheck(context.Background(), f.check(p, "alice"))
	require.ErrorIs(t, err, ports.ErrClosed)
	_, err = f.store.CleanupExpired(context.Background(), 1)
	require.ErrorIs(t, err, ports.ErrClosed)
	_, err = f.store.Stats(context.Background())
	require.ErrorIs(t, err, ports.ErrClosed)
	_, err = f.store.TableStats(context.Background())
	require.ErrorIs(t, err, ports.ErrClosed)
}

// TestZeroValuesPrint: nil and zero values of the package's types print
// under every printer without panicking.
func TestZeroValuesPrint(t *testing.T) {
	t.Parallel()
	leakcheck.CheckPrintable(t, "nil *Store", (*postgres.Store)(nil))
	leakcheck.CheckPrintable(t, "zero Store", &postgres.Store{})
	leakcheck.CheckPrintable(t, "zero Config", postgres.Config{})
	leakcheck.CheckPrintable(t, "zero AdmissionError", &postgres.AdmissionError{})
	leakcheck.CheckPrintable(t, "zero MaintenanceError", &postgres.MaintenanceError{})
	leakcheck.CheckPrintable(t, "zero ConfigError", &postgres.ConfigError{})
	leakcheck.CheckPrintable(t, "zero ShardOverflowError", &postgres.ShardOverflowError{})
	leakcheck.CheckPrintable(t, "zero TableStats", postgres.TableStats{})
}

// TestNewNilPoolIsInvalidConfig: every constructor error matches
// ports.ErrInvalidConfig; a nil pool used to match ErrNilPool alone.
func TestNewNilPoolIsInvalidConfig(t *testing.T) {
	t.Parallel()
	s, err := postgres.New(nil, postgres.Config{})
	require.Nil(t, s)
	require.ErrorIs(t, err, postgres.ErrNilPool)
	require.ErrorIs(t, err, postgres.ErrInvalidConfig)
	require.ErrorIs(t, err, ports.ErrInvalidConfig)
}
