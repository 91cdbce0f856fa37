package leaktable_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/otelrunlimit"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/app/runlimitfx"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/conformance"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/migrations"
	"github.com/runlimit/runlimit/ports"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The secrets. None has a six-byte window that Go or this test prints by
// itself (a word such as "secret" would be found in every type name).
const (
	keySecret = "Zq8!vK2#mW5@pL9$xR4%tN7^bH3&cJ6*"
	password  = "Pw9-hX2rQv-QXZ7"
	subject   = "Qv7zk@w3jx9p.zq"
	client    = "203.0.113.57"
)

// module is the module path the packages' directories are found under.
const module = "github.com/runlimit/runlimit"

// packages are the directories, relative to the module's root, of the
// packages whose every exported type and error the table prints.
var packages = []string{
	"domain", "ports", "app", "app/wiring", "app/runlimitfx",
	"adapters/memory", "adapters/postgres", "adapters/httplimit", "adapters/otelrunlimit",
	"migrations", "conformance",
}

// typed returns the error of type E in err's chain, so that a case prints
// the typed error itself as well as the chain it came in.
func typed[E error](t *testing.T, err error) E {
	t.Helper()
	var e E
	require.ErrorAs(t, err, &e)
	return e
}

// fixture is what the table is built from.
type fixture struct {
	hasher  domain.KeyHasher
	policy  domain.Policy
	key     domain.SubjectKey
	check   domain.Check
	secrets [][]byte
}

func setup(t *testing.T) fixture {
	t.Helper()
	hasher, err := domain.NewKeyHasher([]byte(keySecret))
	require.NoError(t, err)
	p := domain.MustPolicy("leak.table", "identity", 2, time.Minute)
	key := hasher.KeyString(p, subject)
	// A counter key is the public fingerprint and the subject key.
	kb := key.Bytes()
	clientKey := hasher.KeyString(p, client+"/32").Bytes()
	secrets := [][]byte{[]byte(keySecret), []byte(password), []byte(subject), []byte(client), kb[:], clientKey[:]}
	secrets = append(secrets, leakcheck.KeyedStates(t, []byte(keySecret))...)
	return fixture{hasher: hasher, policy: p, key: key, check: domain.NewCheck(p, key), secrets: secrets}
}

// passwordURL returns db's URL with password set: the local server trusts
// the role and ignores it, and the pool's config holds it all the same.
func passwordURL(t *testing.T, db *pgtest.Database) string {
	t.Helper()
	u, err := neturl.Parse(db.URL)
	require.NoError(t, err)
	u.User = neturl.UserPassword(u.User.Username(), password)
	return u.String()
}

// TestEveryExportedTypePrintsNoSecret is the leak table. Each exported type
// of every package is printed holding what it can hold of the secrets:
// stores with counters, configs with the secret and a database URL or a
// pool with a password, limiters, runtimes and middlewares that have
// admitted and denied the subject, and the errors of invalid input,
// closed stores, unreachable databases and server errors that spell key
// bytes. Each case also prints its type's zero value and a nil pointer to
// it, which must not panic.
func TestEveryExportedTypePrintsNoSecret(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var cases []leakcheck.Case
	for _, build := range []func(*testing.T, fixture) []leakcheck.Case{
		domainCases, portsCases, memoryCases, postgresCases, httpCases, appCases, migrationsCases, conformanceCases,
		hostStoreCases,
	} {
		cases = append(cases, build(t, f)...)
	}

	for _, dir := range packages {
		leakcheck.RequireEveryType(t, "../../"+dir, module+"/"+dir, cases)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			c.Run(t, f.secrets...)
		})
	}
}

func domainCases(t *testing.T, f fixture) []leakcheck.Case {
	t.Helper()
	p, key, check := f.policy, f.key, f.check
	counter := check.CounterKey()
	batch, err := domain.NewBatch([]domain.Check{check}, 0)
	require.NoError(t, err)
	now := domain.InstantOf(time.Hour)
	batch.Observe(0, domain.Observation{})
	_, err = batch.Evaluate(now)
	require.NoError(t, err)
	allowed, err := batch.Decision()
	require.NoError(t, err)
	decision, _ := allowed.Decision(0)
	allowance, _ := decision.Allowance()
	next := batch.Next(0)
	full := domain.Observation{Counter: next, Full: true, EarliestExpiry: now, HasEarliestExpiry: true}

	// A second and a third check: the third is denied.
	var denied domain.BatchDecision
	for range 2 {
		require.NoError(t, batch.Reset([]domain.Check{check}, 0))
		batch.Observe(0, domain.Observation{Counter: next})
		_, err = batch.Evaluate(now)
		require.NoError(t, err)
		next = batch.Next(0)
		denied, err = batch.Decision()
		require.NoError(t, err)
	}
	_, denial, ok := denied.Denied()
	require.True(t, ok)

	_, idErr := domain.NewPolicyID(subject)
	_, policyErr := domain.ParsePolicy("leak.table", "identity", 0, time.Minute)
	_, checkErr := domain.NewCheckCost(p, key, 3)
	_, batchErr := domain.NewBatch([]domain.Check{check, check}, 0)
	_, shortErr := domain.NewKeyHasher([]byte(keySecret[:31]))
	corrupt := &domain.CorruptCounterError{Index: 0}
	return []leakcheck.Case{
		leakcheck.Value("domain.KeyHasher", f.hasher),
		leakcheck.Value("domain.SubjectKey", key),
		leakcheck.Value("domain.CounterKey", counter),
		leakcheck.Value("domain.Fingerprint", p.Fingerprint()),
		leakcheck.Value("domain.Policy", p),
		leakcheck.Value("domain.PolicyID", p.ID()),
		leakcheck.Value("domain.ScopeID", p.Scope()),
		leakcheck.Value("domain.Mode", domain.Shadow),
		leakcheck.Value("domain.Check", check),
		leakcheck.Value("domain.Batch", batch),
		leakcheck.Value("domain.Instant", now),
		leakcheck.Value("domain.Counter", next),
		leakcheck.Value("domain.Observation", full),
		leakcheck.Value("domain.BatchDecision", allowed),
		leakcheck.Value("domain.BatchDecision denied", denied),
		leakcheck.Value("domain.Decision", decision),
		leakcheck.Value("domain.Allowance", allowance),
		leakcheck.Value("domain.Denial", denial),
		leakcheck.Value("domain.Outcome", denied.Outcome()),
		leakcheck.Value("domain.DenialReason", denial.Reason()),
		leakcheck.Value("domain.IdentifierError", typed[*domain.IdentifierError](t, idErr)),
		leakcheck.Value("domain.IdentifierProblem", typed[*domain.IdentifierError](t, idErr).Problem),
		leakcheck.Value("domain.PolicyError", typed[*domain.PolicyError](t, policyErr)),
		leakcheck.Value("domain.PolicyProblem", typed[*domain.PolicyError](t, policyErr).Problem),
		leakcheck.Value("domain.CheckError", typed[*domain.CheckError](t, checkErr)),
		leakcheck.Value("domain.CheckProblem", typed[*domain.CheckError](t, checkErr).Problem),
		leakcheck.Value("domain.BatchError", typed[*domain.BatchError](t, batchErr)),
		leakcheck.Value("domain.BatchProblem", typed[*domain.BatchError](t, batchErr).Problem),
		leakcheck.Value("domain.CorruptCounterError", corrupt),
		leakcheck.Value("domain.ErrCorruptCounter", error(corrupt)),
		leakcheck.Value("domain.ErrBatchProtocol", domain.ErrBatchProtocol),
		leakcheck.Value("domain.ErrInvalidInput", idErr),
		leakcheck.Value("domain.ErrInvalidIdentifier", domain.ErrInvalidIdentifier),
		leakcheck.Value("domain.ErrInvalidPolicy", domain.ErrInvalidPolicy),
		leakcheck.Value("domain.ErrInvalidCheck", domain.ErrInvalidCheck),
		leakcheck.Value("domain.ErrInvalidBatch", batchErr),
		leakcheck.Value("domain.ErrSecretTooShort", shortErr),
	}
}

// portsCases print the port's contracts as the adapters' values hold
// them, and the errors every adapter shares, as they return them.
func portsCases(t *testing.T, f fixture) []leakcheck.Case {
	t.Helper()
	ctx := context.Background()
	store, err := memory.New(memory.Config{MaxKeys: 10})
	require.NoError(t, err)
	_, err = store.AdmitCheck(ctx, f.check)
	require.NoError(t, err)
	stats, err := store.Stats(ctx)
	require.NoError(t, err)
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	require.NoError(t, err)
	var nilCtx context.Context
	_, nilCtxErr := store.AdmitCheck(nilCtx, f.check)
	_, negativeErr := store.CleanupExpired(ctx, -1)
	_, configErr := app.NewLimiter(nil, app.LimiterConfig{})
	_, notBuiltErr := (*app.Limiter)(nil).Check(ctx, f.check)
	closed, err := memory.New(memory.Config{MaxKeys: 1})
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	_, closedErr := closed.AdmitCheck(ctx, f.check)
	return []leakcheck.Case{
		leakcheck.Value[ports.Store]("ports.Store", store),
		leakcheck.Value[ports.CheckAdmitter]("ports.CheckAdmitter", store),
		leakcheck.Value[ports.Cleaner]("ports.Cleaner", store),
		leakcheck.Value[ports.StatsReporter]("ports.StatsReporter", store),
		leakcheck.Value[ports.Closer]("ports.Closer", store),
		leakcheck.Value[ports.Limiter]("ports.Limiter", limiter),
		leakcheck.Value("ports.Stats", stats),
		leakcheck.Value("ports.ErrNilContext", nilCtxErr),
		leakcheck.Value("ports.ErrClosed", closedErr),
		leakcheck.Value("ports.ErrInvalidConfig", configErr),
		leakcheck.Value("ports.ErrNegativeMax", negativeErr),
		leakcheck.Value("ports.ErrNotBuilt", notBuiltErr),
	}
}

func memoryCases(t *testing.T, f fixture) []leakcheck.Case {
	t.Helper()
	ctx := context.Background()
	clock := new(testkit.TrapClock)
	cfg := memory.Config{MaxKeys: 2, Clock: clock}
	store, err := memory.New(cfg)
	require.NoError(t, err)
	_, err = store.AdmitCheck(ctx, f.check)
	require.NoError(t, err)
	// Two more keys than one shard of two can hold.
	var checks []domain.Check
	for _, s := range []string{subject, client, subject + client} {
		checks = append(checks, domain.NewCheck(f.policy, f.hasher.KeyString(f.policy, s)))
	}
	b, err := domain.NewBatch(checks, 0)
	require.NoError(t, err)
	overflowErr := store.Admit(ctx, b)
	clock.Arm(true)
	require.Panics(t, func() { _, _ = store.AdmitCheck(ctx, f.check) })
	clock.Arm(false)
	_, poisonErr := store.AdmitCheck(ctx, f.check)
	_, configErr := memory.New(memory.Config{MaxKeys: -1})
	closed, err := memory.New(memory.Config{MaxKeys: 1})
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	_, closedErr := closed.AdmitCheck(ctx, f.check)
	// Stopped, so that printers reading its fields without atomics do not
	// race with its goroutine.
	coarse := memory.NewCoarseClock()
	coarse.Stop()
	return []leakcheck.Case{
		leakcheck.Value("memory.Store poisoned", store),
		leakcheck.Value("memory.Config", cfg),
		leakcheck.Value[memory.Clock]("memory.Clock", memory.NewManualClock()),
		leakcheck.Value("memory.ManualClock", memory.NewManualClock()),
		leakcheck.Value("memory.CoarseClock", coarse),
		leakcheck.Value("memory.ShardOverflowError", typed[*memory.ShardOverflowError](t, overflowErr)),
		leakcheck.Value("memory.PoisonedShardError", typed[*memory.PoisonedShardError](t, poisonErr)),
		leakcheck.Value("memory.ConfigError", typed[*memory.ConfigError](t, configErr)),
		leakcheck.Value("memory.OpError", typed[*memory.OpError](t, closedErr)),
		leakcheck.Value("memory.ErrInvalidConfig", configErr),
		leakcheck.Value("memory.ErrClosed", closedErr),
		leakcheck.Value("memory.ErrPoisoned", poisonErr),
		leakcheck.Value("memory.ErrNegativeMax", memory.ErrNegativeMax),
	}
}

func postgresCases(t *testing.T, f fixture) []leakcheck.Case {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	pool := db.NewPool(t, func(c *pgxpool.Config) { c.ConnConfig.Password = password })
	cfg := postgres.Config{Protocol: postgres.Optimistic, RowsPerShard: 1}
	store, err := postgres.New(pool, cfg)
	require.NoError(t, err)
	_, err = store.AdmitCheck(ctx, f.check)
	require.NoError(t, err)
	require.NoError(t, store.Ready(ctx))
	stats, err := store.TableStats(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, stats.Fullest)

	// Two keys on one shard of one row.
	shard := postgres.ShardOf(f.check.CounterKey())
	var other domain.Check
	for i := 0; ; i++ {
		other = domain.NewCheck(f.policy, f.hasher.KeyString(f.policy, subject+string(rune('a'+i%26))+string(rune('a'+i/26))))
		if postgres.ShardOf(other.CounterKey()) == shard {
			break
		}
	}
	b, err := domain.NewBatch([]domain.Check{f.check, other}, 0)
	require.NoError(t, err)
	overflowErr := store.Admit(ctx, b)

	// A server error that spells the subject key in its message, detail
	// and hint.
	_, err = db.Pool.Exec(ctx, `
		CREATE FUNCTION test_spell_key() RETURNS trigger LANGUAGE plpgsql AS $$
		DECLARE k text;
		BEGIN
			SELECT encode(o.subject_key, 'hex') INTO k FROM spelled AS o LIMIT 1;
			RAISE EXCEPTION 'duplicate key %', k
				USING ERRCODE = 'unique_violation', DETAIL = 'Key (subject_key)=(\x' || k || ') already exists.', HINT = k;
		END $$;
		CREATE TRIGGER zz_spell AFTER INSERT ON runlimit_fixed_windows
			REFERENCING NEW TABLE AS spelled FOR EACH STATEMENT EXECUTE FUNCTION test_spell_key();`)
	require.NoError(t, err)
	spelling, err := postgres.New(pool, postgres.Config{})
	require.NoError(t, err)
	_, spellErr := spelling.AdmitCheck(ctx, domain.NewCheck(f.policy, f.hasher.KeyString(f.policy, client)))

	// A database that is not there, behind a URL with a password.
	unreachable, err := pgxpool.New(ctx, "postgres://runlimit:"+password+"@127.0.0.1:1/x?sslmode=disable&connect_timeout=5")
	require.NoError(t, err)
	t.Cleanup(unreachable.Close)
	gone, err := postgres.New(unreachable, postgres.Config{AcquireTimeout: 5 * time.Second})
	require.NoError(t, err)
	_, admitErr := gone.AdmitCheck(ctx, f.check)
	_, cleanupErr := gone.CleanupExpired(ctx, 10)
	_, configErr := postgres.New(pool, postgres.Config{Schema: passwordURL(t, db)})
	_, protocolErr := postgres.ParseProtocol(passwordURL(t, db))
	_, nilPoolErr := postgres.New(nil, postgres.Config{})
	require.NoError(t, gone.Close())
	_, closedErr := gone.AdmitCheck(ctx, f.check)
	_, negativeErr := store.CleanupExpired(ctx, -1)
	timeoutErr := &postgres.AdmissionError{Op: postgres.OpAcquire, Timeout: true, Err: context.DeadlineExceeded}
	schemaErr := &postgres.SchemaError{Version: 2, Want: 5}
	settingErr := &postgres.SettingError{Name: "session_replication_role", Value: "replica", Want: "origin"}
	return []leakcheck.Case{
		leakcheck.Value("postgres.Store", store),
		leakcheck.Value[ports.ReadinessChecker]("ports.ReadinessChecker", store),
		leakcheck.Value[ports.QuotaConsumer]("ports.QuotaConsumer", typed[*postgres.AdmissionError](t, spellErr)),
		leakcheck.Value("postgres.Config", store.Config()),
		leakcheck.Value("postgres.Protocol", cfg.Protocol),
		leakcheck.Value("postgres.TableStats", stats),
		leakcheck.Value("postgres.ShardUsage", stats.Fullest[0]),
		leakcheck.Value("postgres.ShardOverflowError", typed[*postgres.ShardOverflowError](t, overflowErr)),
		leakcheck.Value("postgres.DatabaseError", typed[*postgres.DatabaseError](t, spellErr)),
		leakcheck.Value("postgres.AdmissionError of a server error", typed[*postgres.AdmissionError](t, spellErr)),
		leakcheck.Value("postgres.AdmissionError", typed[*postgres.AdmissionError](t, admitErr)),
		leakcheck.Value("postgres.MaintenanceError", typed[*postgres.MaintenanceError](t, cleanupErr)),
		leakcheck.Value("postgres.ConfigError of a Schema", typed[*postgres.ConfigError](t, configErr)),
		leakcheck.Value("postgres.ConfigError of a Protocol", typed[*postgres.ConfigError](t, protocolErr)),
		leakcheck.Value("postgres.SchemaError", schemaErr),
		leakcheck.Value("postgres.ErrInvalidConfig", configErr),
		leakcheck.Value("postgres.ErrSchemaVersion", error(schemaErr)),
		leakcheck.Value("postgres.ErrClosed", closedErr),
		leakcheck.Value("postgres.ErrNilPool", nilPoolErr),
		leakcheck.Value("postgres.ErrTimeout", error(timeoutErr)),
		leakcheck.Value("postgres.ErrNegativeMax", negativeErr),
		leakcheck.Value("postgres.ErrLedger", postgres.ErrLedger),
		leakcheck.Value("postgres.ErrCommitOutcome", postgres.ErrCommitOutcome),
		leakcheck.Value("postgres.ErrPooler", postgres.ErrPooler),
		leakcheck.Value("postgres.ErrUntrustedSchema", postgres.ErrUntrustedSchema),
		leakcheck.Value("postgres.SettingError", settingErr),
		leakcheck.Value("postgres.ErrUnsafeSetting", error(settingErr)),
	}
}

func httpCases(t *testing.T, f fixture) []leakcheck.Case {
	t.Helper()
	store, err := memory.New(memory.Config{MaxKeys: 10})
	require.NoError(t, err)
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	require.NoError(t, err)
	var rejection httplimit.Rejection
	var result httplimit.Result
	var reject httplimit.RejectFunc = func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) {
		rejection = *rej
		httplimit.DefaultReject(w, r, rej)
	}
	var fields httplimit.FieldWriterFunc = httplimit.Draft11{}.WriteFields
	var key httplimit.KeyFunc = httplimit.RemoteNetwork
	limit := httplimit.Limit{Policy: f.policy, Name: "login", Cost: 1}
	cfg := httplimit.Config{Limiter: limiter, Hasher: f.hasher, Limits: []httplimit.Limit{limit}, Key: key, Reject: reject, Fields: fields}
	m, err := httplimit.NewMiddleware(cfg)
	require.NoError(t, err)
	guardCfg := cfg
	guardCfg.Key = nil
	guardCfg.Limits = []httplimit.Limit{{Policy: domain.MustPolicy("leak.guard", "identity", 1, time.Minute)}}
	g, err := httplimit.NewGuard(guardCfg)
	require.NoError(t, err)
	var guardResult httplimit.Result
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		result, _ = httplimit.FromContext(r.Context())
		if res, ok := g.Admit(w, r, []byte(subject)); ok {
			guardResult = res
		}
	}))
	for range 3 { // allowed twice, then denied
		r := httptest.NewRequest(http.MethodPost, "/login", nil)
		r.RemoteAddr = client + ":4444"
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	require.Equal(t, httplimit.ReasonQuota, rejection.Reason)

	// The same name in an inner layer.
	var clash httplimit.Rejection
	cfg.Reject = func(w http.ResponseWriter, r *http.Request, rej *httplimit.Rejection) { clash = *rej }
	inner, err := httplimit.NewMiddleware(cfg)
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "198.51.100.1:1"
	m.Handler(inner.Handler(http.NotFoundHandler())).ServeHTTP(httptest.NewRecorder(), r)

	// A subject too long to count, given to a Guard.
	var subjectRej httplimit.Rejection
	guardCfg.Reject = func(_ http.ResponseWriter, _ *http.Request, rej *httplimit.Rejection) { subjectRej = *rej }
	long, err := httplimit.NewGuard(guardCfg)
	require.NoError(t, err)
	_, admitted := long.Admit(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil),
		[]byte(strings.Repeat(subject, httplimit.MaxSubjectLength/len(subject)+1)))
	require.False(t, admitted)

	clientCfg := httplimit.ClientConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Header: httplimit.XForwardedForHeader}
	network, err := httplimit.NewClientNetwork(clientCfg)
	require.NoError(t, err)
	r = httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.1:1"
	r.Header.Set("X-Forwarded-For", subject)
	_, forwardingErr := network.AppendSubject(nil, r)
	_, identityErr := httplimit.AppendIdentity(nil, subject+"\x00"+keySecret)
	_, configErr := httplimit.NewMiddleware(httplimit.Config{Limiter: limiter, Hasher: f.hasher, Key: key,
		Limits: []httplimit.Limit{{Policy: f.policy, Name: subject + "\x00"}}})
	_, remoteErr := httplimit.RemoteNetwork(nil, httptest.NewRequest(http.MethodGet, "/", nil))
	return []leakcheck.Case{
		leakcheck.Value("httplimit.Config", cfg),
		leakcheck.Value("httplimit.Limit", limit),
		leakcheck.Value("httplimit.Middleware", m),
		leakcheck.Value("httplimit.Guard", g),
		leakcheck.Value("httplimit.Result", result),
		leakcheck.Value("httplimit.Result of a guard", guardResult),
		leakcheck.Value("httplimit.Rejection", &rejection),
		leakcheck.Value("httplimit.Reason", rejection.Reason),
		leakcheck.Value("httplimit.Quota", rejection.Quotas()),
		leakcheck.Value("httplimit.RejectFunc", reject),
		leakcheck.Value("httplimit.KeyFunc", key),
		leakcheck.Value[httplimit.FieldWriter]("httplimit.FieldWriter", httplimit.Draft11{}),
		leakcheck.Value("httplimit.FieldWriterFunc", fields),
		leakcheck.Value("httplimit.Draft11", httplimit.Draft11{}),
		leakcheck.Value("httplimit.ClientConfig", clientCfg),
		leakcheck.Value("httplimit.ClientNetwork", network),
		leakcheck.Value("httplimit.ForwardingHeader", clientCfg.Header),
		leakcheck.Value("httplimit.ForwardingError", typed[*httplimit.ForwardingError](t, forwardingErr)),
		leakcheck.Value("httplimit.ForwardingProblem", typed[*httplimit.ForwardingError](t, forwardingErr).Problem),
		leakcheck.Value("httplimit.IdentityError", typed[*httplimit.IdentityError](t, identityErr)),
		leakcheck.Value("httplimit.IdentityProblem", typed[*httplimit.IdentityError](t, identityErr).Problem),
		leakcheck.Value("httplimit.NameClashError", typed[*httplimit.NameClashError](t, clash.Err)),
		leakcheck.Value("httplimit.ConfigError", typed[*httplimit.ConfigError](t, configErr)),
		leakcheck.Value("httplimit.ErrInvalidConfig", configErr),
		leakcheck.Value("httplimit.ErrInvalidIdentity", identityErr),
		leakcheck.Value("httplimit.ErrRemoteAddr", remoteErr),
		leakcheck.Value("httplimit.ErrForwarding", forwardingErr),
		leakcheck.Value("httplimit.ErrUnknownOutcome", httplimit.ErrUnknownOutcome),
		leakcheck.Value("httplimit.ErrSubjectCount", httplimit.ErrSubjectCount),
		leakcheck.Value("httplimit.ErrNilHandler", httplimit.ErrNilHandler),
		leakcheck.Value("httplimit.ErrNotBuilt", httplimit.ErrNotBuilt),
		leakcheck.Value("httplimit.ErrNilRequest", httplimit.ErrNilRequest),
		leakcheck.Value("httplimit.ErrNameClash", clash.Err),
		leakcheck.Value("httplimit.SubjectError", typed[*httplimit.SubjectError](t, subjectRej.Err)),
		leakcheck.Value("httplimit.ErrInvalidSubject", subjectRej.Err),
	}
}

func appCases(t *testing.T, f fixture) []leakcheck.Case {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	url := passwordURL(t, db)
	pool := db.NewPool(t, func(c *pgxpool.Config) { c.ConnConfig.Password = password })

	mp, tp := sdkmetric.NewMeterProvider(), sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = mp.Shutdown(ctx); _ = tp.Shutdown(ctx) })
	telCfg := otelrunlimit.Config{MeterProvider: mp, TracerProvider: tp}
	tel, err := otelrunlimit.New(telCfg)
	require.NoError(t, err)
	var events []app.Event
	var record app.ObserverFunc = func(e app.Event) { events = append(events, e) }
	observer := app.JoinObservers(tel.Observer(), record)
	contextObserver, ok := tel.Observer().(app.ContextObserver)
	require.True(t, ok)

	cfg := wiring.Config{
		DatabaseURL: wiring.NewSecret(url), KeySecret: wiring.NewSecret(keySecret), Gate: &memory.Config{MaxKeys: 10},
		Postgres: postgres.Config{Protocol: postgres.Optimistic}, Observer: observer, CleanupObserver: tel, CleanupInterval: -1,
	}
	r, err := wiring.Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(ctx) })
	for range 3 { // allowed twice, then denied
		_, err = r.Limiter().Check(ctx, f.check)
		require.NoError(t, err)
		_, err = r.Gate().CheckAll(ctx, []domain.Check{f.check})
		require.NoError(t, err)
	}
	require.NotEmpty(t, events)
	poolCfg := wiring.Config{Pool: wiring.BorrowPool(pool), KeySecretFunc: func(context.Context) ([]byte, error) { return []byte(keySecret), nil }}
	poolRuntime, err := wiring.Open(ctx, poolCfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = poolRuntime.Close(ctx) })

	_, urlErr := wiring.Open(ctx, wiring.Config{DatabaseURL: wiring.NewSecret(url + "&port=notaport"), KeySecret: wiring.NewSecret(keySecret)})
	_, envErr := wiring.ConfigFromLookup(func(name string) (string, bool) {
		if name == wiring.EnvKeySecret {
			return password, true // too short
		}
		return "", false
	})
	notReady := &wiring.NotReadyError{Store: "postgres", Err: ports.ErrClosed}
	// A start that cannot migrate, because nothing listens behind a URL
	// with a password: the migrator's connect error holds its config.
	unmigrated, err := wiring.New(ctx, wiring.Config{Migrate: true, KeySecret: wiring.NewSecret(keySecret),
		DatabaseURL: wiring.NewSecret("postgres://runlimit:" + password + "@127.0.0.1:1/x?sslmode=disable&connect_timeout=5")})
	require.NoError(t, err)
	migrateErr := unmigrated.Start(ctx)
	cleanupErr := &wiring.CleanupError{Store: "postgres", Err: ports.ErrClosed}
	closed, err := wiring.Open(ctx, wiring.Config{Memory: memory.Config{MaxKeys: 1}, KeySecret: wiring.NewSecret(keySecret)})
	require.NoError(t, err)
	require.NoError(t, closed.Close(ctx))
	notStarted, err := wiring.New(ctx, wiring.Config{Memory: memory.Config{MaxKeys: 1}, KeySecret: wiring.NewSecret(keySecret)})
	require.NoError(t, err)
	startReporter := reporter{tel}
	_, limiterErr := app.NewLimiter(nil, app.LimiterConfig{})

	// runlimitfx, without fx: a lifecycle of its own. The Params printed
	// hold no graph pool: Params holds it as fx gives it, a *pgxpool.Pool,
	// whose config spew prints with its password. What New builds from
	// one holds it as a wiring.BorrowedPool.
	lc := new(lifecycle)
	params := runlimitfx.Params{Config: wiring.Config{DatabaseURL: wiring.NewSecret(url)}, Lifecycle: lc,
		KeySecret: runlimitfx.KeySecret{Secret: wiring.NewSecret(keySecret)}, MeterProvider: mp, TracerProvider: tp}
	result, err := runlimitfx.New(params)
	require.NoError(t, err)
	poolParams := params
	poolParams.Config, poolParams.Pool = wiring.Config{Backend: wiring.BackendPostgres}, pool
	poolResult, err := runlimitfx.New(poolParams)
	require.NoError(t, err)
	for _, h := range lc.hooks {
		require.NoError(t, h.OnStart(ctx))
		t.Cleanup(func() { require.NoError(t, h.OnStop(ctx)) })
	}
	var secretFunc runlimitfx.KeySecretFunc = func(context.Context) ([]byte, error) { return []byte(keySecret), nil }

	var secret wiring.Secret
	require.NoError(t, json.Unmarshal([]byte(`"`+keySecret+`"`), &secret))
	return []leakcheck.Case{
		leakcheck.Value("app.Limiter", r.Limiter()),
		leakcheck.Value("app.LimiterConfig", app.LimiterConfig{Observer: observer, Name: "postgres"}),
		leakcheck.Value("app.Observer", observer),
		leakcheck.Value("app.ContextObserver", contextObserver),
		leakcheck.Value("app.ObserverFunc", record),
		leakcheck.Value("app.Event", events),
		leakcheck.Value("app.ErrInvalidConfig", limiterErr),
		leakcheck.Value("app.ErrStorePanicked", app.ErrStorePanicked),
		leakcheck.Value("otelrunlimit.Config", telCfg),
		leakcheck.Value("otelrunlimit.Telemetry", tel),
		leakcheck.Value("wiring.Config", cfg),
		leakcheck.Value("wiring.Config with a pool", poolCfg),
		leakcheck.Value("wiring.Runtime", r),
		leakcheck.Value("wiring.Runtime on a pool", poolRuntime),
		leakcheck.Value("wiring.Runtime KeyHasher", r.KeyHasher()),
		leakcheck.Value("wiring.Backend", wiring.BackendPostgres),
		leakcheck.Value("wiring.Secret", secret),
		leakcheck.Value("wiring.BorrowedPool", poolCfg.Pool),
		leakcheck.Value[wiring.CleanupObserver]("wiring.CleanupObserver", wiring.JoinCleanupObservers(tel, tel)),
		leakcheck.Value[wiring.StartReporter]("wiring.StartReporter", startReporter),
		leakcheck.Value("wiring.ConfigError", typed[*wiring.ConfigError](t, urlErr)),
		leakcheck.Value("wiring.EnvError", typed[*wiring.EnvError](t, envErr)),
		leakcheck.Value("wiring.NotReadyError", notReady),
		leakcheck.Value("wiring.MigrateError", typed[*wiring.MigrateError](t, migrateErr)),
		leakcheck.Value("wiring.CleanupError", cleanupErr),
		leakcheck.Value("wiring.ErrInvalidConfig", envErr),
		leakcheck.Value("wiring.ErrNotStarted", notStarted.Ready(ctx)),
		leakcheck.Value("wiring.ErrClosed", closed.Ready(ctx)),
		leakcheck.Value("wiring.ErrNotBuilt", (*wiring.Runtime)(nil).Ready(ctx)),
		leakcheck.Value("wiring.ErrCleanupPanicked", wiring.ErrCleanupPanicked),
		leakcheck.Value("runlimitfx.Params", params),
		leakcheck.Value("runlimitfx.Result", result),
		leakcheck.Value("runlimitfx.Result of the graph's pool", poolResult),
		leakcheck.Value("runlimitfx.KeySecret", params.KeySecret),
		leakcheck.Value("runlimitfx.KeySecretFunc", secretFunc),
		leakcheck.Value("runlimitfx.ReadyFunc", result.Ready),
	}
}

// lifecycle is an fx.Lifecycle that only keeps its hooks: fxtest's holds
// the test, which testify's dumps would print whole.
type lifecycle struct{ hooks []fx.Hook }

func (l *lifecycle) Append(h fx.Hook) { l.hooks = append(l.hooks, h) }

// reporter is a cleanup observer with something to add to the Runtime's
// start record, as the fx module's telemetry is.
type reporter struct{ *otelrunlimit.Telemetry }

func (reporter) StartAttrs() []slog.Attr { return []slog.Attr{slog.Bool("metrics", true)} }

func migrationsCases(t *testing.T, _ fixture) []leakcheck.Case {
	t.Helper()
	ctx := context.Background()
	steps, err := migrations.SQL(migrations.DefaultSchema)
	require.NoError(t, err)
	_, schemaErr := migrations.SQL(password)
	nilErr := migrations.MigratePool(ctx, nil, "")
	db := pgtest.New(t)
	return []leakcheck.Case{
		leakcheck.Value("migrations.Step", steps[0]),
		leakcheck.Value[migrations.Querier]("migrations.Querier", db.Pool),
		leakcheck.Value("migrations.ErrInvalidSchema", schemaErr),
		leakcheck.Value("migrations.ErrNilArgument", nilErr),
		leakcheck.Value("migrations.ErrRustIncomplete", migrations.ErrRustIncomplete),
		leakcheck.Value("migrations.ErrUntrustedSchema", migrations.ErrUntrustedSchema),
	}
}

func conformanceCases(t *testing.T, _ fixture) []leakcheck.Case {
	t.Helper()
	store, err := memory.New(memory.Config{MaxKeys: 10})
	require.NoError(t, err)
	clock := new(conformance.ManualClock)
	var advance conformance.AdvanceFunc = clock.Advance
	var partition conformance.PartitionFunc = func(domain.CounterKey) int { return 0 }
	var newStore conformance.NewStoreFunc = func(testing.TB, conformance.Options) conformance.Instance {
		return conformance.Instance{Store: store, Clock: clock}
	}
	var replica conformance.ReplicaFunc = func(testing.TB) ports.Store { return store }
	return []leakcheck.Case{
		leakcheck.Value("conformance.Instance", conformance.Instance{Store: store, Clock: clock, Advance: advance, PartitionOf: partition,
			OpenReplica: replica, Require: []conformance.Capability{conformance.CheckAdmitter}}),
		leakcheck.Value("conformance.Capability", conformance.CheckAdmitter),
		leakcheck.Value("conformance.Options", conformance.Options{Capacity: 10, MaxBatchSize: 4}),
		leakcheck.Value("conformance.ManualClock", clock),
		leakcheck.Value("conformance.AdvanceFunc", advance),
		leakcheck.Value("conformance.PartitionFunc", partition),
		leakcheck.Value("conformance.NewStoreFunc", newStore),
		leakcheck.Value("conformance.ReplicaFunc", replica),
	}
}
