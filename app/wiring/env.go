package wiring

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/migrations"
)

// The environment variables [ConfigFromEnv] reads. Each one left unset, or
// set to the empty string, keeps the Config field's default.
const (
	// EnvBackend selects Config.Backend: "memory", "postgres" or "store".
	// "store" is the host's store, which no variable can hold: set
	// Config.Store or Config.NewStoreFunc on the result, or provide a
	// ports.Store in the fx graph.
	EnvBackend = "RUNLIMIT_BACKEND"
	// EnvDatabaseURL is Config.DatabaseURL, the PostgreSQL connection
	// string, without whitespace at either end.
	EnvDatabaseURL = "RUNLIMIT_DATABASE_URL"
	// EnvMigrate is Config.Migrate: "true" applies the schema at start
	// (any value strconv.ParseBool reads).
	EnvMigrate = "RUNLIMIT_MIGRATE"
	// EnvMemoryMaxKeys is Config.Memory.MaxKeys, a whole number.
	EnvMemoryMaxKeys = "RUNLIMIT_MEMORY_MAX_KEYS"
	// EnvMemoryShards is Config.Memory.Shards, a whole number.
	EnvMemoryShards = "RUNLIMIT_MEMORY_SHARDS"
	// EnvGateMaxKeys sets Config.Gate, a memory gate of this many keys.
	EnvGateMaxKeys = "RUNLIMIT_GATE_MAX_KEYS"
	// EnvGateShards is Config.Gate.Shards; it needs EnvGateMaxKeys.
	EnvGateShards = "RUNLIMIT_GATE_SHARDS"
	// EnvPostgresRowsPerShard is Config.Postgres.RowsPerShard.
	EnvPostgresRowsPerShard = "RUNLIMIT_POSTGRES_ROWS_PER_SHARD"
	// EnvPostgresSchema is Config.Postgres.Schema, the schema holding
	// Runlimit's tables and functions (the command's --schema).
	EnvPostgresSchema = "RUNLIMIT_POSTGRES_SCHEMA"
	// EnvPostgresProtocol is Config.Postgres.Protocol: "locked" (the
	// default) or "optimistic".
	EnvPostgresProtocol = "RUNLIMIT_POSTGRES_PROTOCOL"
	// EnvCleanupInterval is Config.CleanupInterval, a Go duration such as
	// "30s"; a negative one such as "-1s" turns the loop off.
	EnvCleanupInterval = "RUNLIMIT_CLEANUP_INTERVAL"
	// EnvCleanupBatch is Config.CleanupBatch, a whole number.
	EnvCleanupBatch = "RUNLIMIT_CLEANUP_BATCH"
	// EnvKeySecret is Config.KeySecret, the raw key secret, at least 32
	// bytes, without whitespace at either end (a newline left by the file
	// it was written from is refused, not stripped). Left unset, the Config names no source of the secret, and the
	// host sets one (KeySecret, KeySecretFunc, or the fx module's graph);
	// with none set, [Open] and [New] read this variable then and fail if
	// it is still unset. It is the same variable as [DefaultSecretEnv].
	EnvKeySecret = DefaultSecretEnv
)

// EnvError reports an environment variable [ConfigFromEnv] cannot use. It
// names the variable, never its value, and matches [ErrInvalidConfig].
type EnvError struct {
	Var    string // the variable, such as "RUNLIMIT_MEMORY_MAX_KEYS"
	Reason string // what is wrong with its value
}

// Error names the variable and what is wrong with its value.
func (e *EnvError) Error() string {
	return fmt.Sprintf("runlimit: invalid environment: %s %s", e.Var, e.Reason)
}

// Unwrap returns [ErrInvalidConfig].
func (e *EnvError) Unwrap() error { return ErrInvalidConfig }

// ConfigFromEnv returns the Config the RUNLIMIT_* environment variables
// describe (the Env constants list them), for hosts configured by their
// environment; its signature suits fx.Provide. Set fields the environment
// cannot hold, such as a Pool, a Store, an Observer or a Logger, on the
// result. Every unusable variable is reported, as [*EnvError] values joined
// with errors.Join; no error holds a value. Unusable are a value that does
// not parse, a whole number that is negative or above its field's maximum
// (0 keeps a default), a cleanup interval below [MinCleanupInterval], and
// a key secret or database URL with whitespace at either end. The result is checked again,
// as a whole, when the Runtime is built.
func ConfigFromEnv() (Config, error) { return ConfigFromLookup(os.LookupEnv) }

// ConfigFromLookup is [ConfigFromEnv] reading variables through lookup,
// such as a test's map or a host's own source. A nil lookup is an error
// matching [ErrInvalidConfig].
func ConfigFromLookup(lookup func(name string) (string, bool)) (Config, error) {
	if lookup == nil {
		return Config{}, fmt.Errorf("%w: nil lookup function", ErrInvalidConfig)
	}
	var (
		cfg  Config
		errs []error
	)
	get := func(name string) (string, bool) {
		v, ok := lookup(name)
		return v, ok && v != ""
	}
	bad := func(name, reason string) { errs = append(errs, &EnvError{Var: name, Reason: reason}) }
	// whole reads a whole number of at least least and at most most (0
	// for no maximum); zero says what 0 means, when it keeps a default. A
	// value out of range is the variable's error here, not a Config
	// field's error when the Runtime is built, which an operator would
	// have to map back to a variable.
	whole := func(name string, dst *int, least, most int, zero string) {
		v, ok := get(name)
		if !ok {
			return
		}
		// strconv's error quotes the value: only its kind is kept.
		n, err := strconv.Atoi(v)
		switch {
		case errors.Is(err, strconv.ErrRange) && strings.HasPrefix(v, "-"), err == nil && n < 0:
			bad(name, "is negative, want at least "+strconv.Itoa(max(least, 1))+zero)
		case errors.Is(err, strconv.ErrRange):
			bad(name, "is too large for a whole number")
		case err != nil:
			bad(name, "is not a whole number")
		case n < least:
			bad(name, "is below "+strconv.Itoa(least))
		case most > 0 && n > most:
			bad(name, "is more than "+strconv.Itoa(most))
		default:
			*dst = n
		}
	}

	if v, ok := get(EnvBackend); ok {
		switch b := Backend(v); b {
		case BackendMemory, BackendPostgres, BackendStore:
			cfg.Backend = b
		default:
			bad(EnvBackend, fmt.Sprintf("is not %q, %q or %q", BackendMemory, BackendPostgres, BackendStore))
		}
	}
	if v, ok := get(EnvDatabaseURL); ok {
		if spaced(v) {
			bad(EnvDatabaseURL, spacedReason)
		}
		cfg.DatabaseURL = NewSecret(v)
	}
	if v, ok := get(EnvMigrate); ok {
		m, err := strconv.ParseBool(v)
		if err != nil {
			bad(EnvMigrate, "is not true or false")
		}
		cfg.Migrate = m
	}
	// 0 keeps a field's default where it has one; MaxKeys has none, and is
	// judged with the backend when the Runtime is built. The gate's is
	// required once the gate is asked for.
	whole(EnvMemoryMaxKeys, &cfg.Memory.MaxKeys, 0, 0, "")
	whole(EnvMemoryShards, &cfg.Memory.Shards, 0, memory.MaxShards, keepsDefault)
	if _, ok := get(EnvGateMaxKeys); ok {
		cfg.Gate = new(memory.Config)
		whole(EnvGateMaxKeys, &cfg.Gate.MaxKeys, 1, 0, "")
		whole(EnvGateShards, &cfg.Gate.Shards, 0, memory.MaxShards, keepsDefault)
	} else if _, ok := get(EnvGateShards); ok {
		bad(EnvGateShards, "is set without "+EnvGateMaxKeys)
	}
	whole(EnvPostgresRowsPerShard, &cfg.Postgres.RowsPerShard, 0, postgres.MaxRowsPerShard, keepsDefault)
	if v, ok := get(EnvPostgresSchema); ok {
		// The schema's own error quotes it: a name is not a secret, but the
		// rule here is that no error holds a value.
		if err := migrations.CheckSchema(v); err != nil {
			bad(EnvPostgresSchema, "is not a schema name Runlimit can use: 1 to 63 ASCII letters, digits and underscores, not starting with a digit or pg_")
		}
		cfg.Postgres.Schema = v
	}
	if v, ok := get(EnvPostgresProtocol); ok {
		p, err := postgres.ParseProtocol(v)
		if err != nil {
			bad(EnvPostgresProtocol, `is not "locked" or "optimistic"`)
		}
		cfg.Postgres.Protocol = p
	}
	if v, ok := get(EnvCleanupInterval); ok {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			bad(EnvCleanupInterval, `is not a duration such as "30s" or "1m"`)
		case d > 0 && d < MinCleanupInterval:
			bad(EnvCleanupInterval, "is shorter than "+MinCleanupInterval.String()+" (negative turns the loop off)")
		}
		cfg.CleanupInterval = d
	}
	whole(EnvCleanupBatch, &cfg.CleanupBatch, 0, 0, keepsDefault)
	// An unset secret is not this helper's to report: the host may supply
	// it another way, and the Runtime reports a Config without any source.
	switch v, ok := get(EnvKeySecret); {
	case !ok:
	case spaced(v):
		bad(EnvKeySecret, spacedReason)
	case len(v) < domain.MinSecretLength:
		bad(EnvKeySecret, "holds fewer than "+strconv.Itoa(domain.MinSecretLength)+" bytes")
	default:
		cfg.KeySecret = NewSecret(v)
	}
	return cfg, errors.Join(errs...)
}

// spacedReason is the reason of a secret read from the environment with
// whitespace at either end.
const spacedReason = "begins or ends with whitespace (a newline left by the file it came from?): remove it, " +
	"as a secret read with it on one replica and without it on another would give them different keys or databases"

// spaced reports whether v, a secret read from the environment, begins or
// ends with ASCII whitespace: most often the newline at the end of the
// file a secret was written from, which one replica's tooling keeps and
// another's strips. Whitespace within the value is its own.
func spaced(v string) bool {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' }
	return v != "" && (isSpace(v[0]) || isSpace(v[len(v)-1]))
}

// keepsDefault is what 0 means for a whole number whose field has a
// default.
const keepsDefault = " (0 keeps the default)"
