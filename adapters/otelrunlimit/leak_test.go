package otelrunlimit_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/testkit"
)

// TestNoTelemetryHoldsKeyMaterial runs a Runtime with a gate, observed by
// metrics and spans and logging at debug level, through every outcome, a
// store failure, a poisoned shard, an observer's panic and cleanup passes,
// then looks for the secret, the subjects and their subject and counter
// keys, raw, hex and in every other spelling leakcheck knows, in every
// metric attribute, every span's name, attributes, status and events,
// and every log record.
func TestNoTelemetryHoldsKeyMaterial(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, true)
	var logs testkit.LogBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clock := new(testkit.TrapClock)
	store, err := memory.New(memory.Config{MaxKeys: 3, Clock: clock})
	require.NoError(t, err)
	subjects := []string{"alice@example.test", "198.51.100.7", "bob@example.test", "carol@example.test"}
	panicky := app.ObserverFunc(func(e app.Event) {
		if e.Outcome == domain.ShadowDenied {
			panic("observer saw " + subjects[0])
		}
	})
	r, err := wiring.Open(ctx, wiring.Config{
		Store: store, Gate: &memory.Config{MaxKeys: 10}, KeySecret: wiring.NewSecret(testSecret),
		Observer: app.JoinObservers(f.tel.Observer(), panicky), CleanupObserver: f.tel,
		CleanupInterval: -1, Logger: logger,
	})
	require.NoError(t, err)
	for name, stats := range r.StatsFuncs() {
		stop, err := f.tel.WatchStore(name, stats)
		require.NoError(t, err)
		t.Cleanup(stop)
	}

	h := r.KeyHasher()
	identity := domain.MustPolicy("auth.login", "identity", 1, time.Minute)
	client := domain.MustPolicy("auth.login", "client", 2, time.Minute)
	shadow, err := domain.MustPolicy("auth.shadow", "identity", 1, time.Minute).WithMode(domain.Shadow)
	require.NoError(t, err)
	var checks []domain.Check
	add := func(p domain.Policy, subject string) domain.Check {
		c := domain.NewCheck(p, h.KeyString(p, subject))
		checks = append(checks, c)
		return c
	}
	alice, ip := add(identity, subjects[0]), add(client, subjects[1])
	bob, carol := add(identity, subjects[2]), add(identity, subjects[3])
	shadowAlice := add(shadow, subjects[0])
	gateIP := add(domain.MustPolicy("gate.login", "client", 1, time.Minute), subjects[1])

	_, err = r.Gate().Check(ctx, gateIP)
	require.NoError(t, err)
	_, err = r.Gate().Check(ctx, gateIP) // denied
	require.NoError(t, err)
	for range 2 { // allowed, then denied
		_, err = r.Limiter().CheckAll(ctx, []domain.Check{ip, alice})
		require.NoError(t, err)
	}
	for range 2 { // allowed, then shadow-denied (and the panicking observer)
		_, err = r.Limiter().Check(ctx, shadowAlice)
		require.NoError(t, err)
	}
	d, err := r.Limiter().Check(ctx, carol) // the store is full
	require.NoError(t, err)
	require.Equal(t, domain.Denied, d.Outcome())
	f.collect(t) // the gauges read the stores

	clock.Arm(true)
	require.Panics(t, func() { _, _ = r.Limiter().Check(ctx, bob) })
	clock.Arm(false)
	_, err = r.Limiter().Check(ctx, bob)
	require.ErrorIs(t, err, memory.ErrPoisoned)
	require.NoError(t, r.Ready(ctx)) // logs the poisoned shard
	passCtx := f.tel.StartCleanup(ctx, "store")
	n, err := store.CleanupExpired(passCtx, 10)
	f.tel.EndCleanup(passCtx, "store", n, err)
	require.NoError(t, r.Close(ctx))
	_, err = r.Limiter().CheckAll(ctx, []domain.Check{ip, alice}) // the store is closed
	require.Error(t, err)

	secrets := [][]byte{[]byte(testSecret)}
	for _, s := range subjects {
		secrets = append(secrets, []byte(s))
	}
	for _, c := range checks {
		sk, ck := c.SubjectKey().Bytes(), c.CounterKey().Bytes()
		secrets = append(secrets, sk[:], ck[32:])
	}

	// Everything the telemetry wrote, as text.
	var texts []string
	snap := f.collect(t)
	require.NotEmpty(t, snap.sums)
	require.NotEmpty(t, snap.histograms)
	texts = append(texts, snap.attrValues...)
	for name := range snap.sums {
		texts = append(texts, name)
	}
	spans := f.spans.Ended()
	require.GreaterOrEqual(t, len(spans), 9)
	for _, s := range spans {
		texts = append(texts, s.Name(), s.Status().Description)
		for _, kv := range s.Attributes() {
			texts = append(texts, string(kv.Key), kv.Value.String())
		}
		for _, ev := range s.Events() {
			texts = append(texts, ev.Name)
			for _, kv := range ev.Attributes {
				texts = append(texts, string(kv.Key), kv.Value.String())
			}
		}
	}
	out := logs.String()
	require.Contains(t, out, "memory store shard poisoned")
	require.Contains(t, out, "observer panicked")
	texts = append(texts, out)

	all := strings.Join(texts, "\n")
	for _, s := range secrets {
		for _, r := range leakcheck.Renderings(s) {
			require.NotContains(t, all, r, "the telemetry spells a secret")
		}
	}
	require.Contains(t, all, "auth.login/identity", "the telemetry names the policies")
}
