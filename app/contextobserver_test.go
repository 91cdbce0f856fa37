package app_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// traceKey is the context key under which a tracing observer puts the name
// of the span it started.
type traceKey struct{ observer string }

// ctxStore is a store that records, for each admission, the span names the
// context it was called with carries, of the observers it is told about.
type ctxStore struct {
	ports.Store
	names []string
	mu    sync.Mutex
	seen  [][]string
}

func (s *ctxStore) record(ctx context.Context) {
	var spans []string
	for _, n := range s.names {
		if v, ok := ctx.Value(traceKey{n}).(string); ok {
			spans = append(spans, v)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, spans)
}

func (s *ctxStore) Admit(ctx context.Context, b *domain.Batch) error {
	s.record(ctx)
	return s.Store.Admit(ctx, b)
}

// ctxAdmitter is a ctxStore with a single-check path.
type ctxAdmitter struct{ *ctxStore }

func (s ctxAdmitter) AdmitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	s.record(ctx)
	return s.Store.(ports.CheckAdmitter).AdmitCheck(ctx, c)
}

// tracing is a ContextObserver that "starts a span" by putting a name in
// the context, and logs what it was called with to a shared journal.
type tracing struct {
	name       string
	journal    *[]string
	started    *[]app.Event
	ended      *[]app.Event
	panicking  bool
	lastPolicy *[]domain.Policy
}

func (o tracing) StartAdmission(ctx context.Context, e app.Event) context.Context {
	*o.journal = append(*o.journal, o.name+".start")
	*o.started = append(*o.started, e)
	// The event is valid only during the call: keep its last policy.
	if p, ok := e.Policy(e.Size - 1); ok {
		*o.lastPolicy = append(*o.lastPolicy, p)
	}
	if o.panicking {
		panic("tracer bug")
	}
	return context.WithValue(ctx, traceKey{o.name}, o.name+"-span")
}

func (o tracing) EndAdmission(ctx context.Context, e app.Event) {
	span, _ := ctx.Value(traceKey{o.name}).(string)
	*o.journal = append(*o.journal, o.name+".end:"+span+":"+e.Outcome.String())
	*o.ended = append(*o.ended, e)
}

func (o tracing) ObserveAdmission(app.Event) {
	*o.journal = append(*o.journal, o.name+".observe")
}

type ctxSetup struct {
	journal          []string
	started, ended   []app.Event
	lastPolicy       []domain.Policy
	hasher           domain.KeyHasher
	identity, client domain.Policy
}

func newCtxSetup(t *testing.T) *ctxSetup {
	t.Helper()
	hasher, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	return &ctxSetup{hasher: hasher,
		identity: newPolicy(t, "auth.login", "identity", 1, time.Minute),
		client:   newPolicy(t, "auth.login", "client", 5, time.Minute)}
}

func (c *ctxSetup) tracer(name string) tracing {
	return tracing{name: name, journal: &c.journal, started: &c.started, ended: &c.ended, lastPolicy: &c.lastPolicy}
}

func (c *ctxSetup) check(p domain.Policy, subject string) domain.Check {
	return domain.NewCheck(p, c.hasher.KeyString(p, subject))
}

// TestContextObserversWrapTheStore: a context observer is called before the
// store with what is known then, the store runs with the context it
// returned, and it ends the admission with that context and the outcome,
// instead of ObserveAdmission; Check and CheckAll are told apart on stores
// with and without a single-check path.
func TestContextObserversWrapTheStore(t *testing.T) {
	t.Parallel()
	for name, single := range map[string]bool{"single-check path": true, "batches only": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCtxSetup(t)
			inner := &ctxStore{Store: newMemoryStore(t), names: []string{"a"}}
			var store ports.Store = inner
			if single {
				store = ctxAdmitter{inner}
			}
			limiter, err := app.NewLimiter(store, app.LimiterConfig{Name: "edge", Observer: c.tracer("a")})
			require.NoError(t, err)
			alice := c.check(c.identity, "alice@example.test")
			client := c.check(c.client, "198.51.100.7")

			_, err = limiter.Check(t.Context(), alice)
			require.NoError(t, err)
			_, err = limiter.CheckAll(t.Context(), []domain.Check{alice})
			require.NoError(t, err)
			_, err = limiter.CheckAll(t.Context(), []domain.Check{client, alice})
			require.NoError(t, err)

			require.Equal(t, []string{
				"a.start", "a.end:a-span:allowed",
				"a.start", "a.end:a-span:denied",
				"a.start", "a.end:a-span:denied",
			}, c.journal, "ObserveAdmission is not called for a context observer")
			require.Equal(t, [][]string{{"a-span"}, {"a-span"}, {"a-span"}}, inner.seen,
				"the store runs with the context StartAdmission returned")

			require.Len(t, c.started, 3)
			for i, want := range []struct {
				size     int
				checkAll bool
			}{{1, false}, {1, true}, {2, true}} {
				s, e := c.started[i], c.ended[i]
				require.Equal(t, "edge", s.Limiter)
				require.Equal(t, want.size, s.Size, "admission %d", i)
				require.Equal(t, want.checkAll, s.CheckAll, "admission %d", i)
				require.Equal(t, want.checkAll, e.CheckAll, "admission %d", i)
				require.Zero(t, s.Outcome, "nothing is decided before the store")
				require.Equal(t, -1, s.Index)
				require.Zero(t, s.Duration)
				require.NoError(t, s.Err)
				require.True(t, c.identity.Equal(c.lastPolicy[i]), "the policies are known before the store")
			}
			require.Equal(t, 1, c.ended[2].Index, "the identity check denied the batch")
			require.Positive(t, c.ended[2].Duration)
		})
	}
}

// TestContextObserversChainAndJoin: joined context observers each wrap the
// next, the store sees every one's context, each ends with its own, and a
// plain observer among them gets ObserveAdmission in its place.
func TestContextObserversChainAndJoin(t *testing.T) {
	t.Parallel()
	c := newCtxSetup(t)
	var plain []string
	inner := &ctxStore{Store: newMemoryStore(t), names: []string{"a", "b"}}
	observer := app.JoinObservers(c.tracer("a"),
		app.ObserverFunc(func(e app.Event) { plain = append(plain, e.Outcome.String()) }), c.tracer("b"))
	limiter, err := app.NewLimiter(ctxAdmitter{inner}, app.LimiterConfig{Observer: observer})
	require.NoError(t, err)

	_, err = limiter.Check(t.Context(), c.check(c.identity, "alice@example.test"))
	require.NoError(t, err)
	require.Equal(t, []string{"a.start", "b.start", "a.end:a-span:allowed", "b.end:b-span:allowed"}, c.journal)
	require.Equal(t, []string{"allowed"}, plain)
	require.Equal(t, [][]string{{"a-span", "b-span"}}, inner.seen)
}

// TestContextObserversThatPanicDoNotChangeAdmissions: a panic in
// StartAdmission is logged, the store runs with the caller's context and
// that observer sees the admission through ObserveAdmission, without a
// context of its own; the others carry on; a panic in EndAdmission is
// logged too.
func TestContextObserversThatPanicDoNotChangeAdmissions(t *testing.T) {
	t.Parallel()
	c := newCtxSetup(t)
	var logs bytes.Buffer
	bad := c.tracer("bad")
	bad.panicking = true
	inner := &ctxStore{Store: newMemoryStore(t), names: []string{"bad", "good"}}
	limiter, err := app.NewLimiter(ctxAdmitter{inner}, app.LimiterConfig{
		Name: "edge", Observer: app.JoinObservers(bad, c.tracer("good")),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	alice := c.check(c.identity, "alice@example.test")
	for _, want := range []domain.Outcome{domain.Allowed, domain.Denied} {
		var d domain.Decision
		require.NotPanics(t, func() { d, err = limiter.Check(t.Context(), alice) })
		require.NoError(t, err)
		require.Equal(t, want, d.Outcome(), "quota is consumed once")
	}
	require.Equal(t, []string{
		"bad.start", "good.start", "bad.observe", "good.end:good-span:allowed",
		"bad.start", "good.start", "bad.observe", "good.end:good-span:denied",
	}, c.journal, "an observer whose start panicked sees the admission through ObserveAdmission")
	require.Equal(t, [][]string{{"good-span"}, {"good-span"}}, inner.seen)
	require.Equal(t, 2, bytes.Count(logs.Bytes(), []byte("level=ERROR")), logs.String())
	require.Contains(t, logs.String(), "limiter=edge policies=auth.login/identity outcome=pending panic_type=string")

	logs.Reset()
	ending := app.ObserverFunc(func(app.Event) {})
	limiter, err = app.NewLimiter(newMemoryStore(t), app.LimiterConfig{
		Observer: app.JoinObservers(endPanics{}, ending), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	require.NotPanics(t, func() { _, err = limiter.Check(t.Context(), alice) })
	require.NoError(t, err)
	require.Contains(t, logs.String(), "outcome=allowed panic_type=string")
}

// endPanics is a context observer that panics when the admission ends.
type endPanics struct{}

func (endPanics) ObserveAdmission(app.Event) {}
func (endPanics) StartAdmission(ctx context.Context, _ app.Event) context.Context {
	return ctx
}
func (endPanics) EndAdmission(context.Context, app.Event) { panic("end") }

// passThrough is a context observer that does nothing.
type passThrough struct{}

func (passThrough) ObserveAdmission(app.Event) {}
func (passThrough) StartAdmission(ctx context.Context, _ app.Event) context.Context {
	return ctx
}
func (passThrough) EndAdmission(context.Context, app.Event) {}

func TestContextObserverAddsNoAllocations(t *testing.T) {
	c := newCtxSetup(t)
	limiter, err := app.NewLimiter(newMemoryStore(t), app.LimiterConfig{Observer: passThrough{}})
	require.NoError(t, err)
	check := c.check(c.client, "198.51.100.7")
	batch := []domain.Check{check, c.check(c.identity, "alice@example.test")}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := limiter.Check(ctx, check); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs, "a check observed with its context allocates nothing")
	if raceEnabled {
		return
	}
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := limiter.CheckAll(ctx, batch); err != nil {
			panic(err)
		}
	})
	require.LessOrEqual(t, allocs, 1.0, "a batch allocates only the decisions the caller owns")
}

// TestEventsTellCheckFromCheckAll: a plain observer's events say whether
// Check or CheckAll admitted, a batch of one included, with and without a
// single-check path.
func TestEventsTellCheckFromCheckAll(t *testing.T) {
	t.Parallel()
	c := newCtxSetup(t)
	for name, store := range map[string]ports.Store{"single-check path": newMemoryStore(t), "batches only": batchOnly{newMemoryStore(t)}} {
		var checkAll []bool
		limiter, err := app.NewLimiter(store, app.LimiterConfig{
			Observer: app.ObserverFunc(func(e app.Event) { checkAll = append(checkAll, e.CheckAll) }),
		})
		require.NoError(t, err)
		alice := c.check(c.client, "alice@example.test")
		_, err = limiter.Check(t.Context(), alice)
		require.NoError(t, err)
		_, err = limiter.CheckAll(t.Context(), []domain.Check{alice})
		require.NoError(t, err)
		require.Equal(t, []bool{false, true}, checkAll, name)
	}
}

// nilPointerContext is a context.Context whose methods panic on a nil
// receiver.
type nilPointerContext struct{ context.Context }

// returnsNilPointer is a context observer whose StartAdmission returns a
// nil *nilPointerContext.
type returnsNilPointer struct{}

func (returnsNilPointer) ObserveAdmission(app.Event) {}
func (returnsNilPointer) StartAdmission(context.Context, app.Event) context.Context {
	return (*nilPointerContext)(nil)
}
func (returnsNilPointer) EndAdmission(context.Context, app.Event) {}

// TestContextObserverReturningANilPointer: a StartAdmission that returned
// a nil pointer in the context interface used to hand it to the store,
// whose first ctx.Err() panicked in the caller's Check. It means ctx
// unchanged, as nil does.
func TestContextObserverReturningANilPointer(t *testing.T) {
	t.Parallel()
	c := newCtxSetup(t)
	p := newPolicy(t, "auth.login", "identity", 5, time.Minute)
	for name, store := range map[string]ports.Store{
		"single-check path": newMemoryStore(t), "batches only": batchOnly{newMemoryStore(t)},
	} {
		l, err := app.NewLimiter(store, app.LimiterConfig{Observer: returnsNilPointer{}})
		require.NoError(t, err)
		require.NotPanics(t, func() {
			d, err := l.Check(t.Context(), c.check(p, "alice"))
			require.NoError(t, err)
			require.Equal(t, domain.Allowed, d.Outcome())
			bd, err := l.CheckAll(t.Context(), []domain.Check{c.check(p, "bob")})
			require.NoError(t, err)
			require.Equal(t, domain.Allowed, bd.Outcome())
		}, name)
	}
}
