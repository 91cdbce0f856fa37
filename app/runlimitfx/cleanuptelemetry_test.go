package runlimitfx_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
)

// scriptedCleaner is a host store whose cleanup passes go by a script: the
// first removes 3 counters, the second fails, and the third waits for the
// application to stop, saying so on third.
type scriptedCleaner struct {
	*hostStore
	calls atomic.Int32
	third chan struct{}
}

func (s *scriptedCleaner) CleanupExpired(ctx context.Context, _ int) (int, error) {
	switch s.calls.Add(1) {
	case 1:
		return 3, nil
	case 2:
		return 0, errors.New("redis: READONLY")
	case 3:
		close(s.third)
	}
	<-ctx.Done()
	return 0, ctx.Err()
}

// cleanupLines returns the runlimit.cleanup.* data points of lines.
func cleanupLines(lines []string) []string {
	return slices.DeleteFunc(lines, func(l string) bool { return !strings.HasPrefix(l, "runlimit.cleanup.") })
}

// cleanupSpans returns the ended spans of cleanup passes.
func cleanupSpans(tel *telemetry) []sdktrace.ReadOnlySpan {
	return slices.DeleteFunc(tel.spans.Ended(), func(s sdktrace.ReadOnlySpan) bool { return s.Name() != otelrunlimit.SpanCleanup })
}

// TestModuleExportsCleanupTelemetry: with a meter and a tracer provider in
// the graph, the module's cleanup loop counts its passes, the counters
// they removed and their failures, and makes a span of each pass; a pass
// cut short by stop is neither a run nor a failure.
func TestModuleExportsCleanupTelemetry(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	store := &scriptedCleaner{hostStore: newHostStore(t), third: make(chan struct{})}
	fxApp := fxtest.New(t, runlimitfx.Module, tel.supply,
		fx.Supply(wiring.Config{Store: store, KeySecret: wiring.NewSecret(testSecret), CleanupInterval: time.Millisecond}),
		fx.Invoke(func(*wiring.Runtime) {})).RequireStart()

	// Passes never overlap: once the third has begun, the first two have
	// ended.
	select {
	case <-store.third:
	case <-time.After(10 * time.Second):
		t.Fatal("no third cleanup pass began")
	}
	require.Equal(t, []string{
		"runlimit.cleanup.failures{runlimit.store=store} 1",
		"runlimit.cleanup.removed{runlimit.store=store} 3",
		"runlimit.cleanup.runs{runlimit.store=store} 2",
	}, cleanupLines(tel.collect(t)))
	spans := cleanupSpans(tel)
	require.Len(t, spans, 2)
	require.Equal(t, codes.Unset, spans[0].Status().Code)
	require.Equal(t, sdktrace.Status{Code: codes.Error, Description: "redis: READONLY"}, spans[1].Status())

	fxApp.RequireStop()
	require.Equal(t, []string{
		"runlimit.cleanup.failures{runlimit.store=store} 1",
		"runlimit.cleanup.removed{runlimit.store=store} 3",
		"runlimit.cleanup.runs{runlimit.store=store} 2",
	}, cleanupLines(tel.collect(t)), "the pass stop cut short counts nothing")
	spans = cleanupSpans(tel)
	require.Len(t, spans, 3)
	require.Equal(t, codes.Unset, spans[2].Status().Code)
}
