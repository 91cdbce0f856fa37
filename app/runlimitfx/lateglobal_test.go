package runlimitfx_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
)

// ownProcessEnv marks the test binary run by a test that sets the global
// OpenTelemetry providers in a process of its own, as the other tests of
// this package run in parallel with the globals unset.
const ownProcessEnv = "RUNLIMITFX_TEST_OWN_PROCESS"

// inOwnProcess runs the calling test alone in a new test process and
// reports whether the caller is that process.
func inOwnProcess(t *testing.T) bool {
	t.Helper()
	if os.Getenv(ownProcessEnv) == t.Name() {
		return true
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), ownProcessEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "%s", out)
	return false
}

// globalProviderRun starts the module with the global meter provider set
// by setGlobal (given the provider, before or during start, as the caller
// arranges), makes one allowed check, and returns the collected metrics
// and the logs.
func globalProviderRun(t *testing.T, setGlobal func(mp *sdkmetric.MeterProvider) []fx.Option) (metrics []string, logs string) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	var (
		buf     testkit.LogBuffer
		limiter *app.Limiter
		hasher  domain.KeyHasher
	)
	opts := append(setGlobal(mp),
		runlimitfx.Module, fx.Supply(memoryConfig(t), buf.Logger()),
		fx.Populate(&limiter, &hasher))
	fxApp := fxtest.New(t, opts...).RequireStart()
	defer fxApp.RequireStop()

	p := loginPolicy(t, "auth.login")
	require.True(t, check(t, limiter, hasher, p, "alice@example.test").PermitsRequest())
	tel := &telemetry{reader: reader}
	return tel.collect(t), buf.String()
}

// TestGlobalProviderSetOnStartIsReported: a host that sets the global
// meter provider in an OnStart hook appended before the module's, after
// the module built its limiters, gets no metrics from the module (the
// limiters were built unobserved, at no cost per admission), and the
// module says so in a warning and in its started record instead of
// staying silent.
func TestGlobalProviderSetOnStartIsReported(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	metrics, logs := globalProviderRun(t, func(mp *sdkmetric.MeterProvider) []fx.Option {
		return []fx.Option{fx.Invoke(func(lc fx.Lifecycle) {
			lc.Append(fx.Hook{OnStart: func(context.Context) error {
				otel.SetMeterProvider(mp)
				return nil
			}})
		})}
	})
	for _, m := range metrics {
		require.False(t, strings.HasPrefix(m, "runlimit.admissions"), "the limiters were built unobserved: %s", m)
	}
	require.Contains(t, logs, `level=WARN msg="runlimit: a global OpenTelemetry provider was set after the module built its limiters;`)
	require.Contains(t, logs, `msg="runlimit: started" backend=memory gate=false migrate=false cleanup_interval=1m0s metrics=false tracing=false`)
}

// TestGlobalProviderSetBeforeTheModuleIsUsed: the global provider set
// before the module is built, as OpenTelemetry's guides set it at the top
// of main, records Runlimit's metrics, with no warning.
func TestGlobalProviderSetBeforeTheModuleIsUsed(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	metrics, logs := globalProviderRun(t, func(mp *sdkmetric.MeterProvider) []fx.Option {
		otel.SetMeterProvider(mp)
		return nil
	})
	require.Contains(t, metrics,
		"runlimit.admissions{runlimit.limiter=memory,runlimit.outcome=allowed,runlimit.policy.id=auth.login,runlimit.policy.scope=identity} 1")
	require.Contains(t, metrics, "runlimit.store.headroom{runlimit.store=memory} 99", "the store is watched")
	require.NotContains(t, logs, "level=WARN")
	require.Contains(t, logs, `msg="runlimit: started" backend=memory gate=false migrate=false cleanup_interval=1m0s metrics=true tracing=false`)
}

// TestStartedRecordSaysWhetherTelemetryIsOn: without providers, in the
// graph or global, the started record says telemetry is off; with both
// in the graph, on.
func TestStartedRecordSaysWhetherTelemetryIsOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		providers bool
		want      string
	}{
		{"none", false, "metrics=false tracing=false"},
		{"both in the graph", true, "metrics=true tracing=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs testkit.LogBuffer
			opts := []fx.Option{runlimitfx.Module, fx.Supply(memoryConfig(t), logs.Logger()), useEverything}
			if tc.providers {
				opts = append(opts, newTelemetry(t).supply)
			}
			fxtest.New(t, opts...).RequireStart().RequireStop()
			require.Contains(t, logs.String(), `msg="runlimit: started" backend=memory gate=false migrate=false cleanup_interval=1m0s `+tc.want+"\n")
		})
	}
}
