package wiring_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/ports"
)

// nilContext is a nil context.Context: what a careless caller passes,
// spelled so that staticcheck lets the probe through.
var nilContext context.Context

// TestUnbuiltRuntimeNeverPanics: a nil *Runtime and a zero Runtime hold
// nothing. Start and Ready refuse with ErrNotBuilt, Close has nothing to
// close, and the limiters they hand out fail every check closed.
func TestUnbuiltRuntimeNeverPanics(t *testing.T) {
	t.Parallel()
	p := loginPolicy(t, "zero")
	h, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	valid := domain.NewCheck(p, h.KeyString(p, "alice"))

	runtimes := map[string]*wiring.Runtime{"nil": nil, "zero": new(wiring.Runtime)}
	for name, r := range runtimes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			require.NotPanics(t, func() {
				require.ErrorIs(t, r.Start(ctx), wiring.ErrNotBuilt)
				require.ErrorIs(t, r.Start(ctx), ports.ErrNotBuilt)
				require.ErrorIs(t, r.Ready(ctx), wiring.ErrNotBuilt)
				require.ErrorIs(t, r.Ready(nilContext), ports.ErrNilContext)
				require.NoError(t, r.Close(ctx))
				require.NoError(t, r.Close(ctx), "twice")
				require.NoError(t, r.Close(nilContext))
				require.Nil(t, r.Gate())
				require.True(t, r.KeyHasher().IsZero())
				require.Empty(t, r.StatsFuncs())

				_, err := r.Limiter().Check(ctx, valid)
				require.ErrorIs(t, err, ports.ErrNotBuilt)
				_, err = r.Limiter().CheckAll(ctx, []domain.Check{valid})
				require.ErrorIs(t, err, ports.ErrNotBuilt)
			})
		})
	}
}

// TestNilContexts: New, Open and Start refuse a nil context before any
// work; Close treats one as context.Background, so a runtime can always
// be closed.
func TestNilContexts(t *testing.T) {
	t.Parallel()
	var nilCtx context.Context
	_, err := wiring.New(nilCtx, memoryConfig(t))
	require.ErrorIs(t, err, ports.ErrNilContext)
	_, err = wiring.Open(nilCtx, memoryConfig(t))
	require.ErrorIs(t, err, ports.ErrNilContext)

	r, err := wiring.New(context.Background(), memoryConfig(t))
	require.NoError(t, err)
	var startErr error
	require.NotPanics(t, func() { startErr = r.Start(nilCtx) })
	require.ErrorIs(t, startErr, ports.ErrNilContext)
	// The refused start left the runtime as it was: it still starts.
	require.ErrorIs(t, r.Ready(context.Background()), wiring.ErrNotStarted)
	require.NoError(t, r.Start(context.Background()))
	require.NoError(t, r.Ready(context.Background()))
	require.ErrorIs(t, r.Ready(nilCtx), ports.ErrNilContext)
	require.NotPanics(t, func() { require.NoError(t, r.Close(nilCtx)) })
	require.ErrorIs(t, r.Ready(context.Background()), wiring.ErrClosed)
	require.NoError(t, r.Close(context.Background()), "Close twice")
	require.ErrorIs(t, r.Start(context.Background()), wiring.ErrClosed)
}

// TestClosedRuntimeLimiterFailsClosed: checks after Close fail closed with
// the store's closed error and consume nothing.
func TestClosedRuntimeLimiterFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := wiring.Open(ctx, memoryConfig(t))
	require.NoError(t, err)
	p := loginPolicy(t, "closed")
	l, h := r.Limiter(), r.KeyHasher()
	require.NoError(t, r.Close(ctx))
	d, err := l.Check(ctx, domain.NewCheck(p, h.KeyString(p, "alice")))
	require.ErrorIs(t, err, ports.ErrClosed)
	require.False(t, d.PermitsRequest())
	require.False(t, ports.MayHaveConsumedQuota(err))
}

// TestConfigFromLookupNil: a nil lookup function used to panic.
func TestConfigFromLookupNil(t *testing.T) {
	t.Parallel()
	var err error
	require.NotPanics(t, func() { _, err = wiring.ConfigFromLookup(nil) })
	require.ErrorIs(t, err, wiring.ErrInvalidConfig)
}

// nilCleanupObserver dereferences its receiver.
type nilCleanupObserver struct{ n int }

func (o *nilCleanupObserver) StartCleanup(ctx context.Context, _ string) context.Context {
	o.n++
	return ctx
}

func (o *nilCleanupObserver) EndCleanup(context.Context, string, int, error) { o.n++ }

// TestNilCleanupObserverIsNone: a nil pointer in Config.CleanupObserver
// used to panic on every pass (recovered and logged each time); it counts
// as no observer.
func TestNilCleanupObserverIsNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs bytes.Buffer
	var obs *nilCleanupObserver
	cfg := memoryConfig(t)
	cfg.CleanupObserver = obs
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
	ticks := make(chan time.Time)
	r, err := wiring.OpenWithTicks(ctx, cfg, ticks)
	require.NoError(t, err)
	tick(t, ticks)
	tick(t, ticks)
	require.NoError(t, r.Close(ctx))
	require.NotContains(t, logs.String(), "panicked")
	require.Empty(t, logs.String())
}

// TestZeroValuesPrint: nil and zero values of the package's types print
// under every printer without panicking.
func TestZeroValuesPrint(t *testing.T) {
	t.Parallel()
	leakcheck.CheckPrintable(t, "nil *Runtime", (*wiring.Runtime)(nil))
	leakcheck.CheckPrintable(t, "zero Runtime", &wiring.Runtime{})
	leakcheck.CheckPrintable(t, "zero Config", wiring.Config{})
	leakcheck.CheckPrintable(t, "zero Secret", wiring.Secret{})
	leakcheck.CheckPrintable(t, "zero CleanupError", &wiring.CleanupError{})
	leakcheck.CheckPrintable(t, "zero ConfigError", &wiring.ConfigError{})
	leakcheck.CheckPrintable(t, "zero NotReadyError", &wiring.NotReadyError{})
	leakcheck.CheckPrintable(t, "zero EnvError", &wiring.EnvError{})
}
