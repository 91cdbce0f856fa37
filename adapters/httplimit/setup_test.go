package httplimit_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// testSecret is the key secret of every test hasher.
var testSecret = bytes.Repeat([]byte("Qk7#zv9!wP2^mX4&"), 2)

// fixture is a memory store on a manual clock, a limiter over it and a
// hasher.
type fixture struct {
	clock   *memory.ManualClock
	store   *memory.Store
	limiter *app.Limiter
	hasher  domain.KeyHasher
}

func setup(t testing.TB) fixture {
	return setupStore(t, memory.Config{MaxKeys: 1024})
}

func setupStore(t testing.TB, cfg memory.Config) fixture {
	t.Helper()
	clock := memory.NewManualClock()
	cfg.Clock = clock
	store, err := memory.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	require.NoError(t, err)
	return fixture{clock: clock, store: store, limiter: limiter, hasher: newHasher(t)}
}

func newHasher(t testing.TB) domain.KeyHasher {
	t.Helper()
	h, err := domain.NewKeyHasher(testSecret)
	require.NoError(t, err)
	return h
}

// config returns a Config over the fixture's limiter with the given limits
// and key function.
func (f fixture) config(key httplimit.KeyFunc, limits ...httplimit.Limit) httplimit.Config {
	return httplimit.Config{Limiter: f.limiter, Hasher: f.hasher, Limits: limits, Key: key}
}

func (f fixture) middleware(t testing.TB, key httplimit.KeyFunc, limits ...httplimit.Limit) *httplimit.Middleware {
	t.Helper()
	m, err := httplimit.NewMiddleware(f.config(key, limits...))
	require.NoError(t, err)
	return m
}

func limitOf(p domain.Policy) httplimit.Limit { return httplimit.Limit{Policy: p} }

// recorder is a handler that records whether it ran, what it read from the
// request's context and body.
type recorder struct {
	calls  int
	result httplimit.Result
	hasRes bool
	body   string
}

func (h *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.calls++
	h.result, h.hasRes = httplimit.FromContext(r.Context())
	b, _ := io.ReadAll(r.Body)
	h.body = string(b)
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "ok\n")
}

// do serves r through h and returns the recorded response.
func do(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// bodyWatcher is a request body that counts reads.
type bodyWatcher struct {
	reads int
	r     io.Reader
}

func (b *bodyWatcher) Read(p []byte) (int, error) {
	b.reads++
	return b.r.Read(p)
}

// fakeLimiter returns a fixed decision or error and counts its calls. A
// single check gets the batch decision's first decision, or a zero one.
type fakeLimiter struct {
	decision domain.BatchDecision
	err      error
	calls    int // Check and CheckAll
	batches  int // CheckAll
	checks   []domain.Check
}

var _ ports.Limiter = (*fakeLimiter)(nil)

func (l *fakeLimiter) Check(_ context.Context, c domain.Check) (domain.Decision, error) {
	l.calls++
	l.checks = []domain.Check{c}
	d, _ := l.decision.Decision(0)
	return d, l.err
}

func (l *fakeLimiter) CheckAll(_ context.Context, checks []domain.Check) (domain.BatchDecision, error) {
	l.calls++
	l.batches++
	l.checks = append([]domain.Check(nil), checks...)
	return l.decision, l.err
}

// decisionOf drives a real memory store to produce a decision of the kind
// wanted, so fakes return decisions the domain built.
func decisionOf(t testing.TB, cfg memory.Config, p domain.Policy, before int, advance time.Duration) domain.BatchDecision {
	t.Helper()
	f := setupStore(t, cfg)
	check := []domain.Check{domain.NewCheck(p, f.hasher.KeyString(p, "subject"))}
	var d domain.BatchDecision
	for range before + 1 {
		var err error
		d, err = f.limiter.CheckAll(context.Background(), check)
		require.NoError(t, err)
		f.clock.Advance(advance)
	}
	return d
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }
