package otelrunlimit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/ports"
)

// scriptStore is a store the script runs on, with what the script needs
// of it.
type scriptStore interface {
	ports.Store
	ports.Cleaner
	ports.StatsReporter
	ports.Closer
}

// script is a sequence of admissions with a known outcome each, run
// through a limiter named "edge" observed by f's Telemetry.
type script struct {
	f        *fixture
	store    scriptStore
	name     string // the store's name for its gauges and cleanup
	limiter  *app.Limiter
	client   domain.Policy // 3 a minute
	identity domain.Policy // 1 a minute
	shadow   domain.Policy // 1 a minute, shadow mode
	// subjects, chosen by the store: the ip, alice and bob's checks never
	// share a capacity partition, and overflow's falls in a full one once
	// they are stored.
	ip, alice, bob, overflow string
	// beforeCleanup runs before the cleanup pass.
	beforeCleanup func()
}

func newScript(t *testing.T, f *fixture, store scriptStore, name string) *script {
	t.Helper()
	shadow, err := domain.MustPolicy("auth.shadow", "identity", 1, time.Minute).WithMode(domain.Shadow)
	require.NoError(t, err)
	s := &script{f: f, store: store, name: name,
		client:   domain.MustPolicy("auth.login", "client", 3, time.Minute),
		identity: domain.MustPolicy("auth.login", "identity", 1, time.Minute),
		shadow:   shadow,
		ip:       "198.51.100.7", alice: "alice@example.test", bob: "bob@example.test", overflow: "carol@example.test"}
	s.limiter, err = app.NewLimiter(store, app.LimiterConfig{Name: "edge", Observer: f.tel.Observer()})
	require.NoError(t, err)
	return s
}

func (s *script) check(p domain.Policy, subject string) domain.Check {
	return domain.NewCheck(p, s.f.hasher.KeyString(p, subject))
}

// run plays the script, requiring each outcome, and collects the metrics
// at three points: headroom after the first admission, again after the
// store filled up (within the stats interval, then past it), and at the
// end.
func (s *script) run(t *testing.T) (first, cached, full, end snapshot) {
	t.Helper()
	ctx := context.Background()
	stop, err := s.f.tel.WatchStore(s.name, s.store.Stats)
	require.NoError(t, err)
	t.Cleanup(stop)
	pair := []domain.Check{s.check(s.client, s.ip), s.check(s.identity, s.alice)}

	bd, err := s.limiter.CheckAll(ctx, pair)
	require.NoError(t, err)
	require.Equal(t, domain.Allowed, bd.Outcome())
	first = s.f.collect(t)

	bd, err = s.limiter.CheckAll(ctx, pair)
	require.NoError(t, err)
	index, denial, _ := bd.Denied()
	require.Equal(t, domain.Denied, bd.Outcome())
	require.Equal(t, 1, index, "the identity policy denies")
	require.Equal(t, domain.QuotaExhausted, denial.Reason())

	for _, step := range []struct {
		check  domain.Check
		want   domain.Outcome
		reason domain.DenialReason
	}{
		{s.check(s.identity, s.bob), domain.Allowed, 0},
		{s.check(s.shadow, s.alice), domain.Allowed, 0},
		{s.check(s.shadow, s.alice), domain.ShadowDenied, domain.QuotaExhausted},
		{s.check(s.identity, s.overflow), domain.Denied, domain.StorageCapacity},
	} {
		d, err := s.limiter.Check(ctx, step.check)
		require.NoError(t, err)
		require.Equal(t, step.want, d.Outcome())
		if den, ok := d.Denial(); ok {
			require.Equal(t, step.reason, den.Reason())
		}
	}
	cached = s.f.collect(t)
	s.f.clock.Advance(otelrunlimit.DefaultStatsInterval)
	full = s.f.collect(t)

	pass := func() {
		passCtx := s.f.tel.StartCleanup(ctx, s.name)
		n, err := s.store.CleanupExpired(passCtx, 100)
		s.f.tel.EndCleanup(passCtx, s.name, n, err)
	}
	s.beforeCleanup()
	pass()
	require.NoError(t, s.store.Close())
	pass() // fails: the store is closed
	_, err = s.limiter.Check(ctx, s.check(s.identity, s.alice))
	require.Error(t, err)
	_, err = s.limiter.CheckAll(ctx, pair)
	require.Error(t, err)
	s.f.clock.Advance(otelrunlimit.DefaultStatsInterval)
	end = s.f.collect(t)
	return first, cached, full, end
}

// requireScriptMetrics requires the metrics the script makes, whatever
// the store: headroom is given as (total, fullest partition) after the
// first admission and once full, and removed is what the cleanup pass
// removed.
func requireScriptMetrics(t *testing.T, name string, first, cached, full, end snapshot, firstHeadroom, fullHeadroom [2]int64, removed int64) {
	t.Helper()
	store := "runlimit.store=" + name
	require.Equal(t, map[string]int64{store: firstHeadroom[0]}, first.gauges[otelrunlimit.MetricHeadroom])
	require.Equal(t, map[string]int64{store: firstHeadroom[1]}, first.gauges[otelrunlimit.MetricFullestHeadroom])
	require.Equal(t, first.gauges, cached.gauges, "within the stats interval the store is not read again")
	require.Equal(t, map[string]int64{store: fullHeadroom[0]}, full.gauges[otelrunlimit.MetricHeadroom])
	require.Equal(t, map[string]int64{store: fullHeadroom[1]}, full.gauges[otelrunlimit.MetricFullestHeadroom])
	require.Empty(t, end.gauges[otelrunlimit.MetricHeadroom], "a closed store reports no headroom")

	require.Equal(t, map[string]int64{
		checkAttrs("edge", "auth.login", "client", "allowed"):           1,
		checkAttrs("edge", "auth.login", "identity", "allowed"):         2,
		checkAttrs("edge", "auth.login", "identity", "quota_denied"):    1,
		checkAttrs("edge", "auth.shadow", "identity", "allowed"):        1,
		checkAttrs("edge", "auth.shadow", "identity", "shadow_denied"):  1,
		checkAttrs("edge", "auth.login", "identity", "capacity_denied"): 1,
		checkAttrs("edge", "auth.login", "identity", "failed"):          2,
		checkAttrs("edge", "auth.login", "client", "failed"):            1,
	}, end.sums[otelrunlimit.MetricAdmissions])
	require.Equal(t, map[string]uint64{
		admissionAttrs("edge", "allowed"):         3,
		admissionAttrs("edge", "quota_denied"):    1,
		admissionAttrs("edge", "shadow_denied"):   1,
		admissionAttrs("edge", "capacity_denied"): 1,
		admissionAttrs("edge", "failed"):          2,
	}, end.histograms[otelrunlimit.MetricAdmissionLatency])
	require.Equal(t, otelrunlimit.LatencyBuckets, end.bounds[otelrunlimit.MetricAdmissionLatency])
	require.Equal(t, map[string]int64{"runlimit.limiter=edge,runlimit.may_have_consumed_quota=false": 2},
		end.sums[otelrunlimit.MetricAdmissionErrors])

	require.Equal(t, map[string]int64{store: 2}, end.sums[otelrunlimit.MetricCleanupRuns])
	require.Equal(t, map[string]int64{store: 1}, end.sums[otelrunlimit.MetricCleanupFailures])
	if removed > 0 {
		require.Equal(t, map[string]int64{store: removed}, end.sums[otelrunlimit.MetricCleanupRemoved])
	} else {
		require.Empty(t, end.sums[otelrunlimit.MetricCleanupRemoved])
	}

	units := map[string]string{
		otelrunlimit.MetricAdmissions:       "{admission}",
		otelrunlimit.MetricAdmissionErrors:  "{error}",
		otelrunlimit.MetricAdmissionLatency: "s",
		otelrunlimit.MetricHeadroom:         "{counter}",
		otelrunlimit.MetricFullestHeadroom:  "{counter}",
		otelrunlimit.MetricCleanupRuns:      "{run}",
		otelrunlimit.MetricCleanupRemoved:   "{counter}",
		otelrunlimit.MetricCleanupFailures:  "{failure}",
	}
	for _, snap := range []snapshot{full, end} {
		for name, unit := range snap.units {
			require.Equal(t, units[name], unit, name)
		}
	}
}

// TestScriptedMetricsOnMemory: exact values for a scripted sequence on a
// memory store of 4 counters in one shard.
func TestScriptedMetricsOnMemory(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	clock := memory.NewManualClock()
	store, err := memory.New(memory.Config{MaxKeys: 4, Clock: clock})
	require.NoError(t, err)
	s := newScript(t, f, store, "memory")
	// The cleanup pass comes after every window has expired.
	first, cached, full, end := s.runWith(t, func() { clock.Advance(2 * time.Minute) })
	requireScriptMetrics(t, "memory", first, cached, full, end, [2]int64{2, 2}, [2]int64{0, 0}, 4)
}

// TestScriptedMetricsOnPostgres: the same sequence on PostgreSQL, one row
// per capacity shard, with subjects chosen so that the script's keys take
// distinct shards and the overflow falls in a taken one.
func TestScriptedMetricsOnPostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	f := setup(t, false)
	store, err := postgres.New(db.Pool, postgres.Config{RowsPerShard: 1})
	require.NoError(t, err)
	s := newScript(t, f, store, "postgres")
	s.pickShards(t)
	first, cached, full, end := s.runWith(t, func() {})
	total := int64(postgres.ShardCount)
	requireScriptMetrics(t, "postgres", first, cached, full, end, [2]int64{total - 2, 0}, [2]int64{total - 4, 0}, 0)
}

// runWith is run with beforeCleanup called before the cleanup pass.
func (s *script) runWith(t *testing.T, beforeCleanup func()) (first, cached, full, end snapshot) {
	t.Helper()
	s.beforeCleanup = beforeCleanup
	return s.run(t)
}

// pickShards chooses the script's subjects for a PostgreSQL store: the
// four keys it stores on distinct capacity shards, and an overflow
// subject whose key falls on one of them.
func (s *script) pickShards(t *testing.T) {
	t.Helper()
	taken := map[int]bool{}
	shard := func(p domain.Policy, subject string) int { return postgres.ShardOf(s.check(p, subject).CounterKey()) }
	pick := func(prefix string, fits func(subject string) bool) string {
		for i := range 10_000 {
			if subject := fmt.Sprintf("%s-%d", prefix, i); fits(subject) {
				return subject
			}
		}
		t.Fatalf("no subject fits for %s", prefix)
		return ""
	}
	// free takes the shards of subject's checks under ps if they are all
	// free and distinct.
	free := func(subject string, ps ...domain.Policy) bool {
		mine := map[int]bool{}
		for _, p := range ps {
			sh := shard(p, subject)
			if taken[sh] || mine[sh] {
				return false
			}
			mine[sh] = true
		}
		for sh := range mine {
			taken[sh] = true
		}
		return true
	}
	s.ip = pick("ip", func(sub string) bool { return free(sub, s.client) })
	s.alice = pick("alice", func(sub string) bool { return free(sub, s.identity, s.shadow) })
	s.bob = pick("bob", func(sub string) bool { return free(sub, s.identity) })
	s.overflow = pick("overflow", func(sub string) bool { return taken[shard(s.identity, sub)] })
}

// TestAttributeSetsPastTheCacheOverflow: a host that makes policy ids up
// (against the advice) still has every admission counted, past the cache
// under the overflow set, and made-up events count nothing.
func TestAttributeSetsPastTheCacheOverflow(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	// The SDK's own limit (2,000 sets) out of the way.
	f.reader = sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader), sdkmetric.WithCardinalityLimit(10_000))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tel, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: mp})
	require.NoError(t, err)
	f.tel = tel
	store, limiter := f.edgeLimiter(t, 2*otelrunlimit.MaxCachedAttributes)
	ctx := context.Background()
	// Each admission takes a check's set; the latency's set is bounded
	// apart.
	n := otelrunlimit.MaxCachedAttributes + 10
	for i := range n {
		p := domain.MustPolicy(fmt.Sprintf("tenant-%d", i), "identity", 1, time.Minute)
		_, err := limiter.Check(ctx, domain.NewCheck(p, f.hasher.KeyString(p, "alice")))
		require.NoError(t, err)
	}
	f.tel.Observer().ObserveAdmission(app.Event{Limiter: "made-up", Size: 1, Index: -1, Outcome: domain.Allowed})
	// The many policies leave an error its own attributes: whether quota
	// may have been consumed is what an operator alerts on.
	require.NoError(t, store.Close())
	p := domain.MustPolicy("tenant-0", "identity", 1, time.Minute)
	_, err = limiter.Check(ctx, domain.NewCheck(p, f.hasher.KeyString(p, "alice")))
	require.ErrorIs(t, err, ports.ErrClosed)

	s := f.collect(t)
	require.Equal(t, map[string]int64{"runlimit.limiter=edge,runlimit.may_have_consumed_quota=false": 1},
		s.sums[otelrunlimit.MetricAdmissionErrors])
	require.Equal(t, uint64(1), s.histograms[otelrunlimit.MetricAdmissionLatency][admissionAttrs("edge", "failed")])
	counts := s.sums[otelrunlimit.MetricAdmissions]
	require.Equal(t, otelrunlimit.MaxCachedAttributes+1, len(counts), "the cached sets, then the overflow's")
	require.Equal(t, int64(11), counts["otel.metric.overflow=true"], "the last 10, and the failed check's")
	var total int64
	for _, c := range counts {
		total += c
	}
	require.Equal(t, int64(n+1), total, "every check is counted once")
	require.Equal(t, uint64(n), s.histograms[otelrunlimit.MetricAdmissionLatency][admissionAttrs("edge", "allowed")])
}
