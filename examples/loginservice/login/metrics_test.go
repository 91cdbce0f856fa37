package login_test

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/examples/loginservice/login"
	"github.com/runlimit/runlimit/examples/loginservice/promfx"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// samples returns the samples of out, Prometheus's text format, whose
// series name starts with prefix, by series ("name{labels}").
func samples(t *testing.T, out, prefix string) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		require.Positive(t, i, "%q: a series and a value", line)
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, "%q", line)
		got[line[:i]] = v
	}
	return got
}

// TestMetrics: with promfx.Module beside the service, as the command
// runs it, GET /metrics serves the runtime's admissions by limiter,
// policy and outcome, their latency histogram's counts and the stores'
// headroom, exactly, for a scripted sequence of logins; and no subject,
// password, key byte or the secret, in any spelling.
func TestMetrics(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			var runtime *wiring.Runtime
			var hasher domain.KeyHasher
			clock := memory.NewManualClock()
			s := startOn(t, b.config(t, clock), listen(t), clock, b.exact, promfx.Module, fx.Populate(&runtime, &hasher))

			// Eight attempts from one network, none with the right
			// password: three for alice, a fourth that her identity
			// limit of 3 denies, three for bob, which spend the client
			// limit of 6, and one for carol, which the client limit
			// denies. The trial limit of 2 shadow-denies the last six;
			// the network limit of 10 lets all eight through.
			const addr = "127.0.0.2"
			attempts := []struct {
				identity string
				status   int
			}{
				{login.DemoIdentity, 401}, {login.DemoIdentity, 401}, {login.DemoIdentity, 401},
				{login.DemoIdentity, 429},
				{login.OtherDemoIdentity, 401}, {login.OtherDemoIdentity, 401}, {login.OtherDemoIdentity, 401},
				{"carol@example.com", 429},
			}
			for i, a := range attempts {
				got := s.login(addr, a.identity, "guess-"+strconv.Itoa(i))
				require.Equal(t, a.status, got.status, "attempt %d: %s", i, got.body)
			}
			got := s.get(addr, "/metrics")
			require.Equal(t, 200, got.status)
			require.Contains(t, got.header.Get("Content-Type"), "text/plain")
			metrics := got.body

			// On memory the gate's policies share the one store's
			// limiter; on PostgreSQL they have the gate's.
			gate, shared := "gate", "postgres"
			if b.name == "memory" {
				gate, shared = "memory", "memory"
			}
			admissions := func(limiter, outcome, policy, scope string) string {
				return `runlimit_admissions_total{runlimit_limiter="` + limiter + `",runlimit_outcome="` + outcome +
					`",runlimit_policy_id="` + policy + `",runlimit_policy_scope="` + scope + `"}`
			}
			require.Contains(t, metrics, "# TYPE runlimit_admissions_total counter\n")
			require.Equal(t, map[string]float64{
				admissions(gate, "allowed", "login.gate", "network"):        8,
				admissions(gate, "allowed", "login.trial", "network"):       2,
				admissions(gate, "shadow_denied", "login.trial", "network"): 6,
				admissions(shared, "allowed", "login", "client"):            6,
				admissions(shared, "allowed", "login", "identity"):          6,
				admissions(shared, "quota_denied", "login", "identity"):     1,
				admissions(shared, "quota_denied", "login", "client"):       1,
			}, samples(t, metrics, "runlimit_admissions_total"))

			// The histogram counts admissions, a batch as one.
			duration := func(limiter, outcome string) string {
				return `runlimit_admission_duration_seconds_count{runlimit_limiter="` + limiter + `",runlimit_outcome="` + outcome + `"}`
			}
			require.Contains(t, metrics, "# TYPE runlimit_admission_duration_seconds histogram\n")
			wantDurations := map[string]float64{duration(shared, "allowed"): 6, duration(shared, "quota_denied"): 2}
			wantDurations[duration(gate, "allowed")] += 8 + 2
			wantDurations[duration(gate, "shadow_denied")] += 6
			require.Equal(t, wantDurations, samples(t, metrics, "runlimit_admission_duration_seconds_count"))

			// Headroom: the tests' memory stores have 1,000 counters in
			// one shard. The gate's network and trial counters of the
			// client network and the shared client, alice's and bob's
			// counters are taken; carol's batch was denied and stored
			// nothing. PostgreSQL's ledger has 256 shards of 4,096 rows.
			headroom := func(store string) string { return `runlimit_store_headroom{runlimit_store="` + store + `"}` }
			fullest := func(store string) string {
				return `runlimit_store_fullest_partition_headroom{runlimit_store="` + store + `"}`
			}
			require.Contains(t, metrics, "# TYPE runlimit_store_headroom gauge\n")
			gotFullest := samples(t, metrics, "runlimit_store_fullest_partition_headroom")
			if b.name == "memory" {
				require.Equal(t, map[string]float64{headroom("memory"): 1000 - 5}, samples(t, metrics, "runlimit_store_headroom"))
				require.Equal(t, map[string]float64{fullest("memory"): 1000 - 5}, gotFullest)
			} else {
				require.Equal(t, map[string]float64{headroom("gate"): 1000 - 2, headroom("postgres"): 256*4096 - 3},
					samples(t, metrics, "runlimit_store_headroom"))
				// Which ledger shards the three rows fall in is the
				// store's business: the fullest holds one to three.
				require.Len(t, gotFullest, 2)
				require.Equal(t, float64(1000-2), gotFullest[fullest("gate")])
				require.Contains(t, []float64{4096 - 1, 4096 - 2, 4096 - 3}, gotFullest[fullest("postgres")])
			}
			require.Contains(t, metrics, `target_info{service_name="loginservice",`)

			// Nothing a request sent, nor the secret, nor any key the
			// service derived from them, in any spelling.
			s.requireNothingSentIn("/metrics", metrics)
			policies, err := login.NewPolicies(testLimits)
			require.NoError(t, err)
			client := netip.MustParsePrefix(addr + "/32").AppendTo(nil)
			type counted struct {
				policy  domain.Policy
				subject []byte
				limiter *app.Limiter
				used    bool
			}
			sharedLimiter, gateLimiter := runtime.Limiter(), runtime.Gate()
			if gateLimiter == nil {
				gateLimiter = sharedLimiter
			}
			ids := func(identity string) []byte {
				id, err := httplimit.AppendIdentity(nil, identity)
				require.NoError(t, err)
				return id
			}
			keys := []counted{
				{policies.Network, client, gateLimiter, true},
				{policies.Trial, client, gateLimiter, true},
				{policies.Client, client, sharedLimiter, true},
				{policies.Identity, ids(login.DemoIdentity), sharedLimiter, true},
				{policies.Identity, ids(login.OtherDemoIdentity), sharedLimiter, true},
				{policies.Identity, ids("carol@example.com"), sharedLimiter, false},
			}
			secrets := [][]byte{[]byte(testSecret)}
			for _, k := range keys {
				key := hasher.Key(k.policy, k.subject)
				sk, ck := key.Bytes(), domain.NewCheck(k.policy, key).CounterKey().Bytes()
				secrets = append(secrets, k.subject, sk[:], ck[:])
			}
			for _, secret := range secrets {
				for _, r := range leakcheck.Renderings(secret) {
					require.NotContains(t, metrics, r, "/metrics spells a subject, a key or the secret")
				}
			}
			// The keys above are the service's: a check of a whole
			// limit is refused on each that the logins used, and
			// allowed on carol's, which they did not.
			for _, k := range keys {
				check, err := domain.NewCheckCost(k.policy, hasher.Key(k.policy, k.subject), k.policy.Limit())
				require.NoError(t, err)
				d, err := k.limiter.Check(context.Background(), check)
				require.NoError(t, err)
				require.Equal(t, !k.used, d.Outcome() == domain.Allowed, "%s %s", k.policy.ID(), k.policy.Scope())
			}
		})
	}
}
