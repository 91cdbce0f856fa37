package runlimitfx_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx/fxtest"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/ports"
)

// TestNewWithoutLifecycle: New called by hand with a Params that has no
// Lifecycle used to build a Runtime and then panic appending its hooks;
// it is a config error now, before anything is built.
func TestNewWithoutLifecycle(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]runlimitfx.Params{
		"zero Params":         {},
		"a valid config only": {Config: memoryConfig(t)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var err error
			require.NotPanics(t, func() { _, err = runlimitfx.New(p) })
			require.ErrorIs(t, err, wiring.ErrInvalidConfig)
			require.ErrorIs(t, err, ports.ErrInvalidConfig)
		})
	}
}

// TestNilValuesFromTheGraph: a nil pointer store and nil observers in the
// graph are refused or left out, never panicked on.
func TestNilValuesFromTheGraph(t *testing.T) {
	t.Parallel()
	t.Run("nil pointer store", func(t *testing.T) {
		t.Parallel()
		var store *hostStore
		lc := fxtest.NewLifecycle(t)
		_, err := runlimitfx.New(runlimitfx.Params{Config: wiring.Config{KeySecret: wiring.NewSecret(testSecret)}, Lifecycle: lc, Store: store})
		require.ErrorIs(t, err, wiring.ErrInvalidConfig)
	})
	t.Run("nil observers in the group", func(t *testing.T) {
		t.Parallel()
		var nilFunc app.ObserverFunc
		lc := fxtest.NewLifecycle(t)
		res, err := runlimitfx.New(runlimitfx.Params{Config: memoryConfig(t), Lifecycle: lc,
			Observers: []app.Observer{nil, nilFunc}})
		require.NoError(t, err)
		lc.RequireStart()
		defer lc.RequireStop()
		p := loginPolicy(t, "graph")
		d := check(t, res.Limiter, res.KeyHasher, p, "alice")
		require.True(t, d.PermitsRequest())
	})
}
