package app

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
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
)

// Defaults of a [Config].
const (
	// DefaultSecretEnv is [Config.SecretEnv] when it is empty.
	DefaultSecretEnv = "RUNLIMIT_KEY_SECRET"
	// DefaultCleanupInterval is [Config.CleanupInterval] when it is zero.
	DefaultCleanupInterval = time.Minute
	// DefaultCleanupBatch is [Config.CleanupBatch] when it is zero.
	DefaultCleanupBatch = 1000
)

// Config describes a [Runtime]: which store holds the quota, how it is
// reached, where the key secret comes from and how expired counters are
// removed. [Open] and [Module] read it. Only the memory backend's
// Memory.MaxKeys, or the PostgreSQL backend's DatabaseURL or Pool, and the
// secret's environment variable are required.
type Config struct {
	// Backend selects the store of the shared quota: [BackendMemory] or
	// [BackendPostgres]. Default [BackendMemory].
	Backend Backend

	// Memory sizes the memory store of [BackendMemory]; its MaxKeys is then
	// required. Ignored by [BackendPostgres]. Default: the zero memory.Config.
	Memory memory.Config

	// DatabaseURL is the PostgreSQL connection string of [BackendPostgres],
	// used when Pool is nil. The Runtime opens a pool from it and closes that
	// pool on Close. A config error never repeats it; a connection error at
	// start may name its host, user and database, never its password.
	// Default "".
	DatabaseURL string
	// Pool is a pool the host owns, for [BackendPostgres] without a
	// DatabaseURL. The Runtime borrows it and never closes it. [Module] takes
	// it from the fx graph when left nil. Default nil.
	Pool *pgxpool.Pool
	// Postgres tunes the PostgreSQL store. Default: the zero postgres.Config,
	// that store's defaults.
	Postgres postgres.Config
	// Migrate applies Runlimit's schema (see the migrations package) into
	// Postgres.Schema when the Runtime starts, before its readiness check.
	// Safe from every replica at once. Default false: the schema is applied
	// by a separate step.
	Migrate bool

	// Gate, with [BackendPostgres], puts a hard-bounded memory store in front
	// of the shared quota: [Runtime.Gate] returns a limiter over it, to be
	// checked with policies of its own before [Runtime.Limiter]. Default nil:
	// no gate.
	Gate *memory.Config

	// SecretEnv names the environment variable holding the key secret: the
	// raw bytes of its value, at least 32 of them (see
	// [domain.NewKeyHasher]). Every replica sharing a store must use the same
	// secret. The config holds the variable's name, never the secret.
	// Default "RUNLIMIT_KEY_SECRET" ([DefaultSecretEnv]).
	SecretEnv string

	// CleanupInterval is how often the background loop removes expired
	// counters from the store and the gate, which otherwise keep their slots
	// (PostgreSQL) or are removed only by checks landing on their shard
	// (memory). Negative turns the loop off. Default 1 minute
	// ([DefaultCleanupInterval]).
	CleanupInterval time.Duration
	// CleanupBatch is the most counters one cleanup call removes; a pass
	// repeats the call while it removes a full batch. At least 1. Default
	// 1,000 ([DefaultCleanupBatch]).
	CleanupBatch int
	// Observer, when set, receives an [Event] for every admission of the
	// limiter and of the gate, named by [Event.Limiter]: "gate", or the
	// backend ("memory" or "postgres"). Default nil.
	Observer Observer

	// CleanupErrorFunc, when set, receives every error of the cleanup loop,
	// a [*CleanupError], from the loop's goroutine; the loop carries on at
	// its next tick. It must not block for long. Default nil: errors are
	// dropped.
	CleanupErrorFunc func(error)
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

func (e *ConfigError) Error() string {
	return fmt.Sprintf("runlimit: invalid config: %s %s", e.Field, e.Reason)
}

// Unwrap returns [ErrInvalidConfig], and Err when it is set.
func (e *ConfigError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidConfig}
	}
	return []error{ErrInvalidConfig, e.Err}
}

// Validate reports the first field of cfg that app itself cannot use, as a
// [*ConfigError]. The Memory, Gate and Postgres sections are checked by their
// stores' constructors when the Runtime is built, and the secret when it is
// read; both are reported as a *ConfigError as well.
func (cfg Config) Validate() error {
	switch cfg.Backend {
	case "", BackendMemory:
		if cfg.Gate != nil {
			return &ConfigError{Field: "Gate", Reason: "needs the postgres backend: a memory gate in front of a memory store gains nothing"}
		}
	case BackendPostgres:
		switch {
		case cfg.DatabaseURL == "" && cfg.Pool == nil:
			return &ConfigError{Field: "DatabaseURL", Reason: "is empty and no Pool is given: the postgres backend needs one of them"}
		case cfg.DatabaseURL != "" && cfg.Pool != nil:
			return &ConfigError{Field: "DatabaseURL", Reason: "and Pool are both set: give one of them"}
		}
	default:
		return &ConfigError{Field: "Backend", Reason: fmt.Sprintf("is %q, want %q or %q", cfg.Backend, BackendMemory, BackendPostgres)}
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
	if cfg.Backend == "" {
		cfg.Backend = BackendMemory
	}
	if cfg.SecretEnv == "" {
		cfg.SecretEnv = DefaultSecretEnv
	}
	if cfg.CleanupInterval == 0 {
		cfg.CleanupInterval = DefaultCleanupInterval
	}
	if cfg.CleanupBatch == 0 {
		cfg.CleanupBatch = DefaultCleanupBatch
	}
	return cfg, nil
}
