package runlimitfx_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/ports"
)

// slowReadyStore is a host's store whose readiness check outlasts the
// application's start timeout: it ends the start's context, as the
// timeout would, and then answers ready.
type slowReadyStore struct {
	ports.Store
	timeout context.CancelFunc
}

func (s slowReadyStore) Ready(context.Context) error {
	s.timeout()
	return nil
}

// TestStartOutlastingItsTimeoutLeavesNothingRunning: when the module's
// OnStart finished after the start's deadline, fx had already reported
// the start as failed, and its rollback, run with that expired context,
// calls no OnStop: the Runtime the hook had started, its cleanup loop
// and its stores stayed running for good. The hook now closes the
// Runtime and fails when it finds its context done.
//
// It does not run in parallel: goleak compares against the goroutines of
// the moment.
func TestStartOutlastingItsTimeoutLeavesNothingRunning(t *testing.T) {
	before := goleak.IgnoreCurrent()
	inner, err := memory.New(memory.Config{MaxKeys: 10})
	require.NoError(t, err)
	t.Cleanup(func() { _ = inner.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got provided
	app := fx.New(fx.NopLogger,
		fx.Supply(wiring.Config{KeySecret: wiring.NewSecret(testSecret), CleanupInterval: time.Hour,
			Gate: &memory.Config{MaxKeys: 10}}),
		fx.Supply(fx.Annotate(slowReadyStore{Store: inner, timeout: cancel}, fx.As(new(ports.Store)))),
		runlimitfx.Module, fx.Populate(&got),
		// A hook after the module's, as a host's server would be.
		fx.Invoke(func(lc fx.Lifecycle) { lc.Append(fx.Hook{OnStart: func(context.Context) error { return nil }}) }))
	require.NoError(t, app.Err())
	require.ErrorIs(t, app.Start(ctx), context.Canceled)
	goleak.VerifyNone(t, before)
	require.ErrorIs(t, got.Runtime.Ready(context.Background()), wiring.ErrClosed)
}
