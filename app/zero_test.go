package app_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/ports"
)

// nilContext is a nil context.Context: what a careless caller passes,
// spelled so that staticcheck lets the probe through.
var nilContext context.Context

// TestUnbuiltLimiterFailsClosed: a nil *Limiter and a zero Limiter have no
// store. They report invalid input as a built limiter does, and otherwise
// refuse with ports.ErrNotBuilt instead of panicking or admitting.
func TestUnbuiltLimiterFailsClosed(t *testing.T) {
	t.Parallel()
	p := loginPolicy(t, "zero")
	h, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	valid := domain.NewCheck(p, h.KeyString(p, "alice"))

	limiters := map[string]*app.Limiter{"nil": nil, "zero": new(app.Limiter)}
	for name, l := range limiters {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cases := []struct {
				name string
				call func() error
				want error
			}{
				{"Check", func() error { _, err := l.Check(context.Background(), valid); return err }, ports.ErrNotBuilt},
				{"Check nil ctx", func() error { _, err := l.Check(nilContext, valid); return err }, ports.ErrNilContext},
				{"CheckAll nil ctx", func() error { _, err := l.CheckAll(nilContext, []domain.Check{valid}); return err }, ports.ErrNilContext},
				{"Check zero check", func() error { _, err := l.Check(context.Background(), domain.Check{}); return err }, domain.ErrInvalidCheck},
				{"CheckAll", func() error { _, err := l.CheckAll(context.Background(), []domain.Check{valid}); return err }, ports.ErrNotBuilt},
				{"CheckAll nil", func() error { _, err := l.CheckAll(context.Background(), nil); return err }, domain.ErrInvalidBatch},
				{"CheckAll zero check", func() error {
					_, err := l.CheckAll(context.Background(), []domain.Check{{}})
					return err
				}, domain.ErrInvalidBatch},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					var err error
					require.NotPanics(t, func() { err = tc.call() })
					require.ErrorIs(t, err, tc.want)
					require.ErrorIs(t, err, domain.ErrInvalidInput)
					require.False(t, ports.MayHaveConsumedQuota(err))
				})
			}
		})
	}
}

// TestUnbuiltLimiterDecisionsAreZero: the refused admission returns no
// decision that could be mistaken for one that permits the request.
func TestUnbuiltLimiterDecisionsAreZero(t *testing.T) {
	t.Parallel()
	p := loginPolicy(t, "zero")
	h, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	var l app.Limiter
	d, err := l.Check(context.Background(), domain.NewCheck(p, h.KeyString(p, "alice")))
	require.ErrorIs(t, err, ports.ErrNotBuilt)
	require.False(t, d.PermitsRequest())
	bd, err := l.CheckAll(context.Background(), []domain.Check{domain.NewCheck(p, h.KeyString(p, "alice"))})
	require.ErrorIs(t, err, ports.ErrNotBuilt)
	require.False(t, bd.PermitsRequest())
}

// TestNilObserversAreNoObservers: a nil ObserverFunc or a nil pointer in
// the Observer interface would panic on every admission (recovered, but
// logged every time); the limiter leaves it out instead.
func TestNilObserversAreNoObservers(t *testing.T) {
	t.Parallel()
	var nilFunc app.ObserverFunc
	var nilPointer *countingObserver
	seen := new(countingObserver)

	cases := []struct {
		name     string
		observer app.Observer
		wantSeen int
	}{
		{"nil ObserverFunc", nilFunc, 0},
		{"nil pointer", nilPointer, 0},
		{"joined nil ones", app.JoinObservers(nilFunc, nilPointer, nil), 0},
		{"joined with a real one", app.JoinObservers(nilFunc, seen, nilPointer), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			l, err := app.NewLimiter(newMapStore(), app.LimiterConfig{
				Observer: tc.observer,
				Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
			})
			require.NoError(t, err)
			p := loginPolicy(t, "observed")
			h, err := domain.NewKeyHasher([]byte(testSecret))
			require.NoError(t, err)
			before := seen.n
			d, err := l.Check(context.Background(), domain.NewCheck(p, h.KeyString(p, "alice")))
			require.NoError(t, err)
			require.True(t, d.PermitsRequest())
			require.Empty(t, logs.String(), "no observer panicked")
			require.Equal(t, tc.wantSeen, seen.n-before)
		})
	}
	require.Nil(t, app.JoinObservers(nilFunc, nilPointer))
}

// countingObserver counts events. Its method dereferences the receiver.
type countingObserver struct{ n int }

func (c *countingObserver) ObserveAdmission(app.Event) { c.n++ }

// TestZeroEventPrints: a zero Event, or one whose size has no checks
// behind it, prints and encodes without panicking. (A negative size made
// MarshalJSON panic in make.)
func TestZeroEventPrints(t *testing.T) {
	t.Parallel()
	for _, e := range []app.Event{{}, {Size: 3, Index: 1, Outcome: domain.Denied}, {Index: -5}, {Size: -1}} {
		require.NotPanics(t, func() {
			_ = e.String()
			_, err := e.MarshalJSON()
			require.NoError(t, err)
			_ = e.LogValue()
			_, _ = e.Decision(0)
			_, _ = e.Policy(0)
			require.False(t, e.MayHaveConsumedQuota())
		})
	}
}

// TestZeroValuesPrint: nil and zero values of the package's types print
// under every printer without panicking.
func TestZeroValuesPrint(t *testing.T) {
	t.Parallel()
	leakcheck.CheckPrintable(t, "nil *Limiter", (*app.Limiter)(nil))
	leakcheck.CheckPrintable(t, "zero Limiter", &app.Limiter{})
	leakcheck.CheckPrintable(t, "zero Event", app.Event{})
	leakcheck.CheckPrintable(t, "zero LimiterConfig", app.LimiterConfig{})
}

// TestNilObserverFuncCalledDirectly: a nil ObserverFunc does nothing
// rather than panic when a host's own code calls it.
func TestNilObserverFuncCalledDirectly(t *testing.T) {
	t.Parallel()
	var f app.ObserverFunc
	require.NotPanics(t, func() { f.ObserveAdmission(app.Event{}) })
}
