package app_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// rogueStore is a store that breaks its contract in one of several ways,
// each of which a limiter must turn into an error that fails closed.
type rogueStore struct {
	// single, when set, is its single-check path.
	single func(ctx context.Context, c domain.Check) (domain.Decision, error)
	admit  func(ctx context.Context, b *domain.Batch) error
}

func (s rogueStore) Admit(ctx context.Context, b *domain.Batch) error { return s.admit(ctx, b) }

type rogueSingle struct{ rogueStore }

func (s rogueSingle) AdmitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	return s.single(ctx, c)
}

// evaluateFresh evaluates b as if every key were absent: every check is
// allowed.
func evaluateFresh(b *domain.Batch) error {
	for i := range b.Len() {
		b.Observe(i, domain.Observation{})
	}
	_, err := b.Evaluate(domain.Instant(1_000_000))
	return err
}

// allowedDecision returns the allowed decision of c on an empty store.
func allowedDecision(c domain.Check) domain.Decision {
	var d domain.Decision
	var next domain.Counter
	_, _ = domain.EvaluateCheck(&c, domain.Instant(1_000_000), &domain.Observation{}, &next, &d)
	return d
}

// nilStoreError is an error type whose methods dereference their receiver.
type nilStoreError struct{ consumed bool }

func (e *nilStoreError) Error() string {
	return "store error" + map[bool]string{true: " (consumed)"}[e.consumed]
}
func (e *nilStoreError) MayHaveConsumedQuota() bool { return e.consumed }

func rogueLimiters(t *testing.T, s rogueStore) map[string]*app.Limiter {
	t.Helper()
	out := make(map[string]*app.Limiter)
	for name, obs := range map[string]app.Observer{"": nil, " observed": app.ObserverFunc(func(e app.Event) { _ = e.String() })} {
		l, err := app.NewLimiter(s, app.LimiterConfig{Observer: obs})
		require.NoError(t, err)
		out["batches only"+name] = l
		if s.single != nil {
			l, err = app.NewLimiter(rogueSingle{s}, app.LimiterConfig{Observer: obs})
			require.NoError(t, err)
			out["single-check path"+name] = l
		}
	}
	return out
}

func TestRogueStoreAllowedDecisionWithAnError(t *testing.T) {
	t.Parallel()
	f := setup(t)
	storeErr := errors.New("commit lost")
	s := rogueStore{
		single: func(_ context.Context, c domain.Check) (domain.Decision, error) { return allowedDecision(c), storeErr },
		admit:  func(_ context.Context, b *domain.Batch) error { _ = evaluateFresh(b); return storeErr },
	}
	for name, l := range rogueLimiters(t, s) {
		d, err := l.Check(t.Context(), f.check("s"))
		require.ErrorIs(t, err, storeErr, name)
		require.Equal(t, domain.Decision{}, d, "%s: an error comes with no decision", name)
		bd, err := l.CheckAll(t.Context(), f.checks(2))
		require.ErrorIs(t, err, storeErr, name)
		require.Equal(t, domain.BatchDecision{}, bd, name)
	}
}

func TestRogueStoreDecisionWithoutOutcome(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := rogueStore{
		single: func(context.Context, domain.Check) (domain.Decision, error) { return domain.Decision{}, nil },
		admit:  func(context.Context, *domain.Batch) error { return nil },
	}
	for name, l := range rogueLimiters(t, s) {
		d, err := l.Check(t.Context(), f.check("s"))
		require.ErrorIs(t, err, domain.ErrBatchProtocol, name)
		require.True(t, ports.MayHaveConsumedQuota(err), name)
		require.False(t, d.PermitsRequest(), name)
	}
}

func TestRogueStoreChangesTheBatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := rogueStore{admit: func(_ context.Context, b *domain.Batch) error {
		c := b.Check(0)
		if err := b.ResetSingle(&c); err != nil {
			return err
		}
		return evaluateFresh(b)
	}}
	for name, l := range rogueLimiters(t, s) {
		bd, err := l.CheckAll(t.Context(), f.checks(3))
		require.ErrorIs(t, err, domain.ErrBatchProtocol, name)
		require.True(t, ports.MayHaveConsumedQuota(err), name)
		require.False(t, bd.PermitsRequest(), "%s: checks 1 and 2 were never evaluated", name)
	}
}

func TestRogueStoreTypedNilError(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := rogueStore{
		single: func(context.Context, domain.Check) (domain.Decision, error) {
			return domain.Decision{}, (*nilStoreError)(nil)
		},
		admit: func(context.Context, *domain.Batch) error { return (*nilStoreError)(nil) },
	}
	for name, l := range rogueLimiters(t, s) {
		var err error
		require.NotPanics(t, func() {
			var d domain.Decision
			d, err = l.Check(t.Context(), f.check("s"))
			require.False(t, d.PermitsRequest())
		}, name)
		require.ErrorIs(t, err, domain.ErrBatchProtocol, name)
		require.NotPanics(t, func() { _ = err.Error(); _ = ports.MayHaveConsumedQuota(err) }, name)
		require.True(t, ports.MayHaveConsumedQuota(err), name)
		require.NotPanics(t, func() {
			var bd domain.BatchDecision
			bd, err = l.CheckAll(t.Context(), f.checks(2))
			require.False(t, bd.PermitsRequest())
		}, name)
		require.ErrorIs(t, err, domain.ErrBatchProtocol, name)
		require.NotPanics(t, func() { _ = err.Error(); _ = ports.MayHaveConsumedQuota(err) }, name)
	}
}

// spanObserver counts the admissions its StartAdmission opened and its
// EndAdmission closed, as a tracer's spans, and the events it received.
type spanObserver struct {
	mu          sync.Mutex
	open, ended int
	errs        []error
}

func (o *spanObserver) ObserveAdmission(e app.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.errs = append(o.errs, e.Err)
}

func (o *spanObserver) StartAdmission(ctx context.Context, _ app.Event) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.open++
	return ctx
}

func (o *spanObserver) EndAdmission(_ context.Context, e app.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended++
	o.errs = append(o.errs, e.Err)
}

// TestObserversHearOfAStorePanic: a store's panic goes on to the caller,
// but only once every observer has had the admission's event, with
// ErrStorePanicked, and a context observer has closed what it opened.
func TestObserversHearOfAStorePanic(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := rogueStore{
		single: func(context.Context, domain.Check) (domain.Decision, error) { panic("store bug") },
		admit:  func(context.Context, *domain.Batch) error { panic("store bug") },
	}
	for name, store := range map[string]ports.Store{"batches only": s, "single-check path": rogueSingle{s}} {
		spans, plain := new(spanObserver), new(spanObserver)
		l, err := app.NewLimiter(store, app.LimiterConfig{
			Observer: app.JoinObservers(spans, app.ObserverFunc(plain.ObserveAdmission)),
		})
		require.NoError(t, err)
		require.PanicsWithValue(t, "store bug", func() { _, _ = l.Check(t.Context(), f.check("s")) }, name)
		require.PanicsWithValue(t, "store bug", func() { _, _ = l.CheckAll(t.Context(), f.checks(2)) }, name)
		require.Equal(t, 2, spans.open, name)
		require.Equal(t, 2, spans.ended, "%s: every span opened is ended", name)
		require.Equal(t, []error{app.ErrStorePanicked, app.ErrStorePanicked}, spans.errs, name)
		require.Equal(t, []error{app.ErrStorePanicked, app.ErrStorePanicked}, plain.errs, name)
		require.True(t, ports.MayHaveConsumedQuota(app.ErrStorePanicked))
	}
}

// TestObserverPanicDuringAStorePanic: an observer that panics while it
// hears of a store's panic is recovered and logged as any observer panic;
// the next observer still gets the event, and the store's panic, not the
// observer's, reaches the caller.
func TestObserverPanicDuringAStorePanic(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := rogueStore{
		single: func(context.Context, domain.Check) (domain.Decision, error) { panic("store bug") },
		admit:  func(context.Context, *domain.Batch) error { panic("store bug") },
	}
	var logs bytes.Buffer
	spans := new(spanObserver)
	l, err := app.NewLimiter(rogueSingle{s}, app.LimiterConfig{
		Observer: app.JoinObservers(app.ObserverFunc(func(app.Event) { panic("observer bug") }), spans),
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	require.PanicsWithValue(t, "store bug", func() { _, _ = l.Check(t.Context(), f.check("s")) })
	require.PanicsWithValue(t, "store bug", func() { _, _ = l.CheckAll(t.Context(), f.checks(2)) })
	require.Equal(t, 2, spans.ended)
	require.Equal(t, 2, bytes.Count(logs.Bytes(), []byte("observer panicked")), logs.String())
	require.Equal(t, 2, bytes.Count(logs.Bytes(), []byte("outcome=error")), logs.String())
}
