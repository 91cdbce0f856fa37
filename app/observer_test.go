package app_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// recorder is an Observer that keeps what it can read of each event while
// the event is valid: its fields, its printed forms, and its policies and
// decisions by index.
type recorder struct {
	mu     sync.Mutex
	events []recorded
}

type recorded struct {
	event     app.Event
	printed   []string // the event printed directly
	inHost    []string // the event printed inside a host struct
	json      string   // encoding/json's form
	logged    string   // slog's text form
	policies  []domain.Policy
	decisions []domain.Decision
	hasDec    []bool
}

func (r *recorder) ObserveAdmission(e app.Event) {
	rec := recorded{event: e}
	// A host struct holding the event in an unexported field is printed by
	// reflection, the path that bypasses Format on the field's own methods.
	type host struct{ e app.Event }
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		rec.printed = append(rec.printed, fmt.Sprintf(verb, e))
		rec.inHost = append(rec.inHost, fmt.Sprintf(verb, host{e}))
	}
	rec.printed = append(rec.printed, e.String())
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	rec.json = string(b)
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})).Info("admission", "event", e)
	rec.logged = logged.String()
	for i := range e.Size {
		p, ok := e.Policy(i)
		if !ok {
			panic("Policy in range reported false")
		}
		rec.policies = append(rec.policies, p)
		d, ok := e.Decision(i)
		rec.decisions, rec.hasDec = append(rec.decisions, d), append(rec.hasDec, ok)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, rec)
}

func (r *recorder) take(t *testing.T) []recorded {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func (r *recorder) one(t *testing.T) recorded {
	t.Helper()
	events := r.take(t)
	require.Len(t, events, 1, "one admission, one event")
	return events[0]
}

// observed is a limiter over a memory store, observed by a recorder.
type observed struct {
	limiter  *app.Limiter
	rec      *recorder
	hasher   domain.KeyHasher
	client   domain.Policy // 3 a minute
	identity domain.Policy // 1 a minute
}

func observedSetup(t *testing.T, store ports.Store) observed {
	t.Helper()
	rec := &recorder{}
	limiter, err := app.NewLimiter(store, app.LimiterConfig{Observer: rec, Name: "edge"})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("app-test-secret-0123456789abcdef"))
	require.NoError(t, err)
	return observed{limiter: limiter, rec: rec, hasher: hasher,
		client:   newPolicy(t, "auth.login", "client", 3, time.Minute),
		identity: newPolicy(t, "auth.login", "identity", 1, time.Minute)}
}

func newMemoryStore(t *testing.T) *memory.Store {
	t.Helper()
	s, err := memory.New(memory.Config{MaxKeys: 100})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestObserverSeesSingleChecks(t *testing.T) {
	t.Parallel()
	o := observedSetup(t, newMemoryStore(t))
	check := domain.NewCheck(o.identity, o.hasher.KeyString(o.identity, "alice@example.test"))

	d, err := o.limiter.Check(t.Context(), check)
	require.NoError(t, err)
	ev := o.rec.one(t)
	require.Equal(t, "edge", ev.event.Limiter)
	require.Equal(t, 1, ev.event.Size)
	require.Equal(t, domain.Allowed, ev.event.Outcome)
	require.Equal(t, -1, ev.event.Index)
	require.Zero(t, ev.event.Reason)
	require.NoError(t, ev.event.Err)
	require.False(t, ev.event.MayHaveConsumedQuota())
	require.Positive(t, ev.event.Duration)
	require.True(t, o.identity.Equal(ev.policies[0]))
	require.True(t, ev.hasDec[0])
	require.Equal(t, d, ev.decisions[0], "the event's decision is the one returned")

	_, err = o.limiter.Check(t.Context(), check)
	require.NoError(t, err)
	ev = o.rec.one(t)
	require.Equal(t, domain.Denied, ev.event.Outcome)
	require.Equal(t, 0, ev.event.Index)
	require.Equal(t, domain.QuotaExhausted, ev.event.Reason)
	require.False(t, ev.hasDec[0], "a denied admission holds no per-check decisions")
	_, ok := ev.event.Policy(1)
	require.False(t, ok, "index past Size")
}

func TestObserverSeesBatches(t *testing.T) {
	t.Parallel()
	o := observedSetup(t, newMemoryStore(t))
	batch := []domain.Check{
		domain.NewCheck(o.client, o.hasher.KeyString(o.client, "198.51.100.7")),
		domain.NewCheck(o.identity, o.hasher.KeyString(o.identity, "alice@example.test")),
	}

	bd, err := o.limiter.CheckAll(t.Context(), batch)
	require.NoError(t, err)
	ev := o.rec.one(t)
	require.Equal(t, 2, ev.event.Size)
	require.Equal(t, domain.Allowed, ev.event.Outcome)
	require.Equal(t, -1, ev.event.Index)
	for i := range batch {
		require.True(t, batch[i].Policy().Equal(ev.policies[i]), "policy %d in caller order", i)
		want, _ := bd.Decision(i)
		require.True(t, ev.hasDec[i])
		require.Equal(t, want, ev.decisions[i], "decision %d", i)
	}

	_, err = o.limiter.CheckAll(t.Context(), batch)
	require.NoError(t, err)
	ev = o.rec.one(t)
	require.Equal(t, domain.Denied, ev.event.Outcome)
	require.Equal(t, 1, ev.event.Index, "the identity check failed")
	require.Equal(t, domain.QuotaExhausted, ev.event.Reason)
	require.True(t, o.identity.Equal(ev.policies[1]))
	require.Contains(t, ev.event.String(), "index=1 policy=auth.login scope=identity reason="+domain.QuotaExhausted.String())
}

// TestEventEncodings: encoding/json and slog show an event's limiter,
// policies, outcome, deciding check and duration, and for a failure the
// error's text and whether quota may have been consumed.
func TestEventEncodings(t *testing.T) {
	t.Parallel()
	store := newMemoryStore(t)
	o := observedSetup(t, store)
	batch := []domain.Check{
		domain.NewCheck(o.client, o.hasher.KeyString(o.client, "198.51.100.7")),
		domain.NewCheck(o.identity, o.hasher.KeyString(o.identity, "alice@example.test")),
	}
	for range 2 { // allowed, then denied by the identity check
		_, err := o.limiter.CheckAll(t.Context(), batch)
		require.NoError(t, err)
	}
	require.NoError(t, store.Close())
	_, err := o.limiter.Check(t.Context(), batch[1])
	require.Error(t, err)
	events := o.rec.take(t)
	require.Len(t, events, 3)

	type encoded struct {
		Limiter              string   `json:"limiter"`
		Size                 int      `json:"size"`
		Policies             []string `json:"policies"`
		Outcome              string   `json:"outcome"`
		Index                *int     `json:"index"`
		Reason               string   `json:"reason"`
		Error                string   `json:"error"`
		MayHaveConsumedQuota *bool    `json:"may_have_consumed_quota"`
		Duration             int64    `json:"duration"`
	}
	decode := func(r recorded) encoded {
		var e encoded
		require.NoError(t, json.Unmarshal([]byte(r.json), &e))
		require.Equal(t, r.event.Duration.Nanoseconds(), e.Duration)
		e.Duration = 0
		return e
	}
	one, no := 1, false
	both := []string{"auth.login/client", "auth.login/identity"}
	require.Equal(t, encoded{Limiter: "edge", Size: 2, Policies: both, Outcome: "allowed"}, decode(events[0]))
	require.Equal(t, encoded{Limiter: "edge", Size: 2, Policies: both, Outcome: "denied", Index: &one, Reason: "quota"},
		decode(events[1]))
	require.Equal(t, encoded{Limiter: "edge", Size: 1, Policies: both[1:], Error: events[2].event.Err.Error(),
		MayHaveConsumedQuota: &no}, decode(events[2]))

	require.Equal(t, "level=INFO msg=admission event.limiter=edge event.size=2 "+
		"event.policies=auth.login/client,auth.login/identity event.outcome=denied event.index=1 event.reason=quota "+
		"event.duration="+events[1].event.Duration.String()+"\n", events[1].logged)
	require.Equal(t, "level=INFO msg=admission event.limiter=edge event.size=1 event.policies=auth.login/identity "+
		`event.error="runlimit: memory store admit: runlimit: store is closed" event.may_have_consumed_quota=false `+
		"event.duration="+events[2].event.Duration.String()+"\n", events[2].logged)
}

func TestObserverSeesShadowDenials(t *testing.T) {
	t.Parallel()
	o := observedSetup(t, newMemoryStore(t))
	shadow, err := o.identity.WithMode(domain.Shadow)
	require.NoError(t, err)
	check := domain.NewCheck(shadow, o.hasher.KeyString(shadow, "alice@example.test"))
	for range 2 {
		d, err := o.limiter.Check(t.Context(), check)
		require.NoError(t, err)
		require.True(t, d.PermitsRequest())
	}
	events := o.rec.take(t)
	require.Len(t, events, 2)
	require.Equal(t, domain.Allowed, events[0].event.Outcome)
	require.Equal(t, domain.ShadowDenied, events[1].event.Outcome)
	require.Equal(t, 0, events[1].event.Index)
	require.Equal(t, domain.QuotaExhausted, events[1].event.Reason)
	require.True(t, events[1].hasDec[0], "a shadow denial is a decision the caller got")
}

// batchOnly hides a store's single-check path.
type batchOnly struct{ ports.Store }

func TestObserverSeesChecksOfStoresWithoutASingleCheckPath(t *testing.T) {
	t.Parallel()
	o := observedSetup(t, batchOnly{newMemoryStore(t)})
	check := domain.NewCheck(o.identity, o.hasher.KeyString(o.identity, "alice@example.test"))
	for _, want := range []domain.Outcome{domain.Allowed, domain.Denied} {
		d, err := o.limiter.Check(t.Context(), check)
		require.NoError(t, err)
		require.Equal(t, want, d.Outcome())
		ev := o.rec.one(t)
		require.Equal(t, want, ev.event.Outcome)
		require.Equal(t, 1, ev.event.Size)
		require.True(t, o.identity.Equal(ev.policies[0]))
	}
}

func TestObserverSeesStoreFailures(t *testing.T) {
	t.Parallel()
	store := newMemoryStore(t)
	o := observedSetup(t, store)
	require.NoError(t, store.Close())
	check := domain.NewCheck(o.identity, o.hasher.KeyString(o.identity, "alice@example.test"))

	_, err := o.limiter.Check(t.Context(), check)
	require.ErrorIs(t, err, memory.ErrClosed)
	ev := o.rec.one(t)
	require.Same(t, err, ev.event.Err)
	require.Zero(t, ev.event.Outcome)
	require.False(t, ev.event.MayHaveConsumedQuota(), "a closed memory store consumed nothing")
	require.False(t, ev.hasDec[0])

	failing := newMapStore()
	failing.err = &quotaError{consumed: true}
	o = observedSetup(t, failing)
	_, err = o.limiter.CheckAll(t.Context(), []domain.Check{check})
	require.Error(t, err)
	ev = o.rec.one(t)
	require.True(t, ev.event.MayHaveConsumedQuota())
	require.Contains(t, ev.event.String(), "may_have_consumed_quota=true")
}

func TestObserverIgnoresInputRejectedBeforeTheStore(t *testing.T) {
	t.Parallel()
	for name, store := range map[string]ports.Store{"single-check path": newMemoryStore(t), "batches only": newMapStore()} {
		o := observedSetup(t, store)
		_, err := o.limiter.Check(t.Context(), domain.Check{})
		require.ErrorIs(t, err, domain.ErrInvalidInput, name)
		check := domain.NewCheck(o.identity, o.hasher.KeyString(o.identity, "alice@example.test"))
		_, err = o.limiter.CheckAll(t.Context(), []domain.Check{check, check})
		require.ErrorIs(t, err, domain.ErrInvalidInput, name)
		require.Empty(t, o.rec.take(t), "%s: invalid input is not an admission", name)
	}
}

// TestEventsNeverShowKeys prints every event every way fmt can, the event
// inside a host struct included, and looks for the subject and for the
// subject and counter key bytes, raw and in hex.
func TestEventsNeverShowKeys(t *testing.T) {
	t.Parallel()
	o := observedSetup(t, newMemoryStore(t))
	subjects := []string{"alice@example.test", "198.51.100.7"}
	batch := []domain.Check{
		domain.NewCheck(o.identity, o.hasher.KeyString(o.identity, subjects[0])),
		domain.NewCheck(o.client, o.hasher.KeyString(o.client, subjects[1])),
	}
	for range 2 { // allowed, then denied
		_, err := o.limiter.CheckAll(t.Context(), batch)
		require.NoError(t, err)
		_, err = o.limiter.Check(t.Context(), batch[0])
		require.NoError(t, err)
	}
	var secrets []string
	for i, c := range batch {
		sk, ck := c.SubjectKey().Bytes(), c.CounterKey().Bytes()
		secrets = append(secrets, subjects[i], string(sk[:8]), string(ck[32:40]),
			hex.EncodeToString(sk[:8]), hex.EncodeToString(ck[32:40]),
			strings.ToUpper(hex.EncodeToString(sk[:8])), fmt.Sprint(sk[:4]))
	}
	events := o.rec.take(t)
	require.Len(t, events, 4)
	for _, ev := range events {
		for _, printed := range ev.printed {
			require.Contains(t, printed, "auth.login/identity", "the event names its policies: %s", printed)
		}
		// Inside a host struct fmt walks the event's fields by reflection;
		// the checks it holds keep their key bytes masked.
		for _, printed := range append(ev.printed, ev.inHost...) {
			for _, s := range secrets {
				require.NotContains(t, printed, s)
			}
		}
	}
}

func TestObserverAddsNoAllocations(t *testing.T) {
	o := observedSetup(t, newMemoryStore(t))
	quiet := app.ObserverFunc(func(app.Event) {})
	limiter, err := app.NewLimiter(newMemoryStore(t), app.LimiterConfig{Observer: quiet})
	require.NoError(t, err)
	check := domain.NewCheck(o.client, o.hasher.KeyString(o.client, "198.51.100.7"))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := limiter.Check(ctx, check); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs, "an observed check allocates nothing")
}
