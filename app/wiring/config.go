package wiring

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/nilcheck"
	"github.com/runlimit/runlimit/ports"
)

// Backend names the store that holds a [Runtime]'s shared quota.
type Backend string

// Backends a [Config] can select.
const (
	// BackendMemory keeps counters in this process ([memory.Store]).
	BackendMemory Backend = "memory"
	// BackendPostgres keeps counters in PostgreSQL, shared by every replica
	// pointing at the same database ([postgres.Store]).
	BackendPostgres Backend = "postgres"
	// BackendStore keeps counters in a store the host supplies
	// (Config.Store or Config.NewStoreFunc), such as a Redis adapter.
	BackendStore Backend = "store"
)

// Defaults of a [Config].
const (
	// DefaultSecretEnv is [Config.SecretEnv] when it is empty.
	DefaultSecretEnv = "RUNLIMIT_KEY_SECRET"
	// DefaultCleanupInterval is [Config.CleanupInterval] when it is zero.
	DefaultCleanupInterval = time.Minute
	// MinCleanupInterval is the shortest [Config.CleanupInterval]: a
	// shorter one (a nanosecond set by mistake for a second) would run
	// cleanup passes back to back against the store.
	MinCleanupInterval = time.Millisecond
	// DefaultCleanupBatch is [Config.CleanupBatch] when it is zero.
	DefaultCleanupBatch = 1000
)

// Config describes a [Runtime]: which store holds the quota, how it is
// reached, where the key secret comes from and how expired counters are
// removed. [Open], [New] and the runlimitfx module read it; [ConfigFromEnv]
// fills one from RUNLIMIT_* environment variables. Only the memory
// backend's Memory.MaxKeys, the PostgreSQL backend's DatabaseURL or Pool,
// the host store of [BackendStore], and the key secret are required.
type Config struct {
	// Backend selects the store of the shared quota: [BackendMemory],
	// [BackendPostgres] or [BackendStore]. Default [BackendStore] when Store
	// or NewStoreFunc is set, [BackendPostgres] when DatabaseURL or Pool is,
	// else [BackendMemory]: a database URL is never ignored.
	Backend Backend

	// Memory sizes the memory store of [BackendMemory]; its MaxKeys is then
	// required. Ignored by [BackendPostgres]. Default: the zero memory.Config.
	Memory memory.Config

	// DatabaseURL is the PostgreSQL connection string of [BackendPostgres],
	// used when Pool is nil: NewSecret(os.Getenv("DATABASE_URL")). It is a
	// [Secret], so printing or logging the Config never shows its password.
	// Set to an empty string, as from an unset variable, it is a config
	// error (see [Secret.IsZero]), never a reason to choose the memory
	// backend.
	// The Runtime opens a pool from it, for the store alone, with its
	// sessions' search_path pinned to pg_catalog, pg_temp (see the postgres
	// package's Server settings), and closes that pool on Close. A
	// config error never repeats it; a connection error at start may name
	// its host, user and database, never its password. A URL with an "@"
	// in or after its host (a password holding "@", "/" or "?" unencoded,
	// which ends the user information or the host early and turns the rest
	// of the password into a host or the database name) is a config error,
	// also behind a "#", which pgx, like libpq, reads as part of the
	// database name, and so is one whose query pgx would read as user
	// information (postgres://host?user=app@server&password=...):
	// percent-encode such characters. So is a keyword/value string with a
	// setting left empty just before its password ("user= password=..."),
	// which, as libpq reads it, takes the password pair as its value.
	// Default: empty.
	DatabaseURL Secret
	// Pool is a pool the host owns, for [BackendPostgres] without a
	// DatabaseURL: BorrowPool(pool). The Runtime borrows it and never
	// closes it. It is a [BorrowedPool], so printing or logging the Config
	// never shows the password in the pool's config. The runlimitfx module
	// takes it from the fx graph when left zero. Default: the zero
	// BorrowedPool, no pool.
	Pool BorrowedPool
	// Postgres tunes the PostgreSQL store. Default: the zero postgres.Config,
	// that store's defaults.
	Postgres postgres.Config
	// Migrate applies Runlimit's schema (see the migrations package) into
	// Postgres.Schema when the Runtime starts, before its readiness check.
	// Safe from every replica at once. The migrator's connection is its
	// own; without a connect_timeout in the connection string, its connect
	// is bounded by Postgres.AcquireTimeout. Default false: the schema is
	// applied by a separate step.
	Migrate bool

	// Store is the host's store of [BackendStore], borrowed: the Runtime
	// never closes it. It gets the cleanup loop if it is a [ports.Cleaner],
	// and readiness checks if it is a [ports.ReadinessChecker] or a
	// [ports.StatsReporter]. Default nil.
	Store ports.Store
	// NewStoreFunc opens the host's store of [BackendStore] when Store is
	// nil. [New] calls it once, with its context, and the Runtime owns what
	// it returns: Close closes it if it is a [ports.Closer]. It should not
	// block on the network (the fx module calls it from a constructor);
	// readiness is checked at start. Default nil.
	NewStoreFunc func(context.Context) (ports.Store, error)

	// Gate, with [BackendPostgres] or [BackendStore], puts a hard-bounded
	// memory store in front of the shared quota: [Runtime.Gate] returns a
	// limiter over it, to be checked with policies of its own before
	// [Runtime.Limiter]. Default nil: no gate.
	Gate *memory.Config

	// KeySecret is the key secret: its raw bytes, at least 32 of them (see
	// [domain.NewKeyHasher]). Every replica sharing a store must use the
	// same secret. Set at most one of KeySecret, KeySecretFunc and
	// SecretEnv. A KeySecret set to an empty string (NewSecret("")) is a
	// config error, not an unset one: see [Secret.IsZero]. Default: unset.
	KeySecret Secret
	// KeySecretFunc returns the key secret, for a host that fetches it from
	// a secret store. [New] calls it once, with its context, and keeps only
	// the hasher built from it; its error is returned wrapped. Default nil.
	KeySecretFunc func(context.Context) ([]byte, error)
	// SecretEnv names the environment variable holding the key secret, read
	// when neither KeySecret nor KeySecretFunc is set. The config holds the
	// variable's name, never the secret. A value with whitespace at either
	// end, as a file's last newline leaves it, is a config error. Default "RUNLIMIT_KEY_SECRET"
	// ([DefaultSecretEnv]).
	SecretEnv string

	// CleanupInterval is how often the background loop removes expired
	// counters from the store and the gate, which otherwise keep their slots
	// (PostgreSQL) or are removed only by checks landing on their shard
	// (memory). Negative turns the loop off. At least 1 ms
	// ([MinCleanupInterval]). Default 1 minute ([DefaultCleanupInterval]).
	CleanupInterval time.Duration
	// CleanupBatch is the most counters one cleanup call removes; a pass
	// repeats the call while it removes a full batch. At least 1. Default
	// 1,000 ([DefaultCleanupBatch]).
	CleanupBatch int
	// Observer, when set, receives an [app.Event] for every admission of the
	// limiter and of the gate, named by [app.Event.Limiter]: "gate", or the
	// backend ("memory" or "postgres"). Default nil.
	Observer app.Observer

	// CleanupObserver, when set, sees every pass of the cleanup loop over
	// each store, before and after it: for cleanup spans and counters,
	// such as those of the otelrunlimit adapter. Default nil; a nil pointer
	// in the interface counts as nil.
	CleanupObserver CleanupObserver

	// CleanupErrorFunc, when set, receives every error of the cleanup loop,
	// a [*CleanupError], from the loop's goroutine; the loop carries on at
	// its next tick. It must not block for long. Default nil: errors are
	// logged at warning level.
	CleanupErrorFunc func(error)

	// Logger receives the Runtime's records: start and stop and the schema
	// migrated at info level (a stop whose store or pool failed to close at
	// warning level), each cleanup pass at debug level, cleanup failures
	// (without CleanupErrorFunc) at warning level, a failed start,
	// an observer's panic and each memory shard poisoned by a panic (once
	// per shard, when the cleanup loop or a readiness check finds it) at
	// error level. No record holds a key, a subject, the key secret or the
	// database password. Default nil: [slog.Default] at the time of each
	// record.
	Logger *slog.Logger
}

// ConfigError reports a [Config] field that cannot be used. It matches
// [ErrInvalidConfig], and also the store's own config error when a store's
// constructor found the problem. Its text never contains the key secret or
// the database URL.
type ConfigError struct {
	Field  string // the Config field, such as "Backend" or "Memory.MaxKeys"
	Reason string // what is wrong with it
	Err    error  // the store's own error, or nil
}

// Error names the field and what is wrong with it.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("runlimit: invalid config: %s %s", e.Field, e.Reason)
}

// Format prints [ConfigError.Error] under every verb. A verb that does not fit
// the struct, such as %d, would otherwise make fmt print Err's fields.
func (e *ConfigError) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(e.Error())) }

// MarshalJSON encodes the field, the reason and the error's text, never
// Err's fields: a driver's error can carry the connection string.
func (e ConfigError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Field  string `json:"field"`
		Reason string `json:"reason"`
		Error  string `json:"error"`
	}{e.Field, e.Reason, e.Error()})
}

// Unwrap returns [ErrInvalidConfig], and Err when it is set.
func (e *ConfigError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidConfig}
	}
	return []error{ErrInvalidConfig, e.Err}
}

// Validate reports the first field of cfg that wiring itself cannot use,
// as a [*ConfigError]. The Memory, Gate and Postgres sections are checked
// by their stores' constructors when the Runtime is built, and the secret
// when it is read; both are reported as a *ConfigError as well.
func (cfg Config) Validate() error {
	// A Secret set to an empty string is most often an unset variable. Let
	// through, an empty DatabaseURL would leave the backend to be inferred
	// as memory (counters per replica) and an empty KeySecret would leave
	// the secret to the environment (keys that may differ between
	// replicas): both refused, before anything else is judged.
	if !cfg.DatabaseURL.IsZero() && cfg.DatabaseURL.Reveal() == "" {
		return &ConfigError{Field: "DatabaseURL", Reason: "is set to an empty string (an unset variable?): give a connection string, or leave DatabaseURL unset"}
	}
	if !cfg.KeySecret.IsZero() && cfg.KeySecret.Reveal() == "" {
		return &ConfigError{Field: "KeySecret", Reason: "is set to an empty string (an unset variable?): give the secret, or leave KeySecret unset to name another source"}
	}
	hostStore := cfg.Store != nil || cfg.NewStoreFunc != nil
	database := !cfg.DatabaseURL.IsZero() || !cfg.Pool.IsZero()
	switch cfg.inferredBackend() {
	case BackendMemory:
		switch {
		case hostStore:
			return &ConfigError{Field: "Store", Reason: "is set with the memory backend: use the store backend"}
		case database:
			return &ConfigError{Field: "DatabaseURL", Reason: "or Pool is set with the memory backend: use the postgres backend"}
		case cfg.Gate != nil:
			return &ConfigError{Field: "Gate", Reason: "needs the postgres or store backend: a memory gate in front of a memory store gains nothing"}
		}
	case BackendPostgres:
		switch {
		case hostStore:
			return &ConfigError{Field: "Store", Reason: "is set with the postgres backend: use the store backend"}
		case cfg.DatabaseURL.IsZero() && cfg.Pool.IsZero():
			return &ConfigError{Field: "DatabaseURL", Reason: "is empty and no Pool is given: the postgres backend needs one of them"}
		case !cfg.DatabaseURL.IsZero() && !cfg.Pool.IsZero():
			return &ConfigError{Field: "DatabaseURL", Reason: "and Pool are both set: give one of them"}
		}
	case BackendStore:
		if !hostStore {
			return &ConfigError{Field: "Store", Reason: "and NewStoreFunc are both nil: the store backend needs one of them"}
		}
	default:
		want := fmt.Sprintf("want %q, %q or %q", BackendMemory, BackendPostgres, BackendStore)
		if !plainWord(string(cfg.Backend)) {
			// A database URL or a secret set as the backend by mistake
			// must not reach the logs.
			return &ConfigError{Field: "Backend", Reason: "is not a backend name (not repeated: it may be a URL or a secret), " + want}
		}
		return &ConfigError{Field: "Backend", Reason: fmt.Sprintf("is %q, %s", cfg.Backend, want)}
	}
	if cfg.Store != nil && cfg.NewStoreFunc != nil {
		return &ConfigError{Field: "Store", Reason: "and NewStoreFunc are both set: give one of them"}
	}
	if hostStore && (!cfg.DatabaseURL.IsZero() || !cfg.Pool.IsZero()) {
		return &ConfigError{Field: "DatabaseURL", Reason: "or Pool is set with the store backend: the host's store is the only one"}
	}
	sources := 0
	for _, set := range []bool{!cfg.KeySecret.IsZero(), cfg.KeySecretFunc != nil, cfg.SecretEnv != ""} {
		if set {
			sources++
		}
	}
	if sources > 1 {
		return &ConfigError{Field: "KeySecret", Reason: "has more than one source: set one of KeySecret, KeySecretFunc and SecretEnv"}
	}
	if cfg.CleanupInterval > 0 && cfg.CleanupInterval < MinCleanupInterval {
		return &ConfigError{Field: "CleanupInterval", Reason: fmt.Sprintf("is %s, want at least %s, or negative to turn the loop off (0 means %s)", cfg.CleanupInterval, MinCleanupInterval, DefaultCleanupInterval)}
	}
	if cfg.CleanupBatch < 0 {
		return &ConfigError{Field: "CleanupBatch", Reason: fmt.Sprintf("is %d, want at least 1 (0 means %d)", cfg.CleanupBatch, DefaultCleanupBatch)}
	}
	return nil
}

// withDefaults validates cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	cfg.Backend = cfg.inferredBackend()
	if cfg.KeySecret.IsZero() && cfg.KeySecretFunc == nil && cfg.SecretEnv == "" {
		cfg.SecretEnv = DefaultSecretEnv
	}
	if cfg.CleanupInterval == 0 {
		cfg.CleanupInterval = DefaultCleanupInterval
	}
	if cfg.CleanupBatch == 0 {
		cfg.CleanupBatch = DefaultCleanupBatch
	}
	// A nil pointer or func in the interface would panic on every pass
	// (recovered, but logged each time): it is no observer.
	if nilcheck.IsNil(cfg.CleanupObserver) {
		cfg.CleanupObserver = nil
	}
	return cfg, nil
}

// inferredBackend is Backend, or when it is empty the backend the other
// fields ask for: a host store, else a database, else memory.
func (cfg Config) inferredBackend() Backend {
	switch {
	case cfg.Backend != "":
		return cfg.Backend
	case cfg.Store != nil || cfg.NewStoreFunc != nil:
		return BackendStore
	case !cfg.DatabaseURL.IsZero() || !cfg.Pool.IsZero():
		return BackendPostgres
	}
	return BackendMemory
}

// ErrInvalidConfig is matched by every [*ConfigError]. It is
// [app.ErrInvalidConfig] itself, so one errors.Is also covers the errors of
// [app.NewLimiter].
var ErrInvalidConfig = app.ErrInvalidConfig

// BorrowedPool is a [pgxpool.Pool] the host owns and lends a [Runtime]
// through Config.Pool; build one with [BorrowPool]. The pool's config holds
// the database password, so no printer shows the pool: under every fmt verb,
// encoding/json and log/slog a set BorrowedPool prints as "[pgxpool.Pool]"
// (the zero one as ""), and printers that walk values by reflection, such as
// fmt on a host struct's unexported fields or the spew dumps in testify's
// failure diffs, see only an address.
//
// The zero value is no pool. BorrowedPools are immutable and safe to copy.
type BorrowedPool struct {
	// p is the *pgxpool.Pool held as an unsafe.Pointer, which printers
	// that walk values by reflection print as an address and never follow
	// (see [Secret]); spew calls no method, so only the field's type can
	// keep it out of the pool.
	p unsafe.Pointer
}

// BorrowPool wraps pool for Config.Pool; a nil pool gives the zero
// BorrowedPool.
func BorrowPool(pool *pgxpool.Pool) BorrowedPool { return BorrowedPool{p: unsafe.Pointer(pool)} }

// Get returns the pool, or nil for the zero BorrowedPool.
func (b BorrowedPool) Get() *pgxpool.Pool { return (*pgxpool.Pool)(b.p) }

// IsZero reports whether b holds no pool.
func (b BorrowedPool) IsZero() bool { return b.p == nil }

// String returns "[pgxpool.Pool]", or "" for the zero BorrowedPool.
func (b BorrowedPool) String() string {
	if b.p == nil {
		return ""
	}
	return "[pgxpool.Pool]"
}

// GoString is [BorrowedPool.String], for %#v.
func (b BorrowedPool) GoString() string { return b.String() }

// Format prints [BorrowedPool.String] under every verb.
func (b BorrowedPool) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(b.String())) }

// MarshalJSON encodes [BorrowedPool.String] as a JSON string, or null for
// the zero BorrowedPool: a pool cannot be read back from JSON.
func (b BorrowedPool) MarshalJSON() ([]byte, error) {
	if b.p == nil {
		return []byte("null"), nil
	}
	return json.Marshal(b.String())
}

// LogValue returns [BorrowedPool.String], for log/slog.
func (b BorrowedPool) LogValue() slog.Value { return slog.StringValue(b.String()) }

// plainWord reports whether s may be repeated in an error: a short word of
// letters, digits, '-' and '_', as a misspelt name is, and never as long as
// a key secret may be.
func plainWord(s string) bool {
	if s == "" || len(s) >= domain.MinSecretLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && c != '-' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
