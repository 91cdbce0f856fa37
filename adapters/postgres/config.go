package postgres

import (
	"fmt"
	"strings"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/migrations"
	"github.com/runlimit/runlimit/ports"
)

// Bounds and defaults of a [Config].
const (
	// ShardCount is the number of capacity shards. A counter's shard is the
	// first byte of its fingerprint XOR the first byte of its subject key.
	ShardCount = 256
	// DefaultRowsPerShard is [Config.RowsPerShard] when it is zero: 4,096
	// rows per shard, 1,048,576 counters in all.
	DefaultRowsPerShard = 4096
	// MaxRowsPerShard is the database's own hard bound per shard, enforced by
	// the capacity ledger's CHECK constraint whoever inserts.
	MaxRowsPerShard = 65536
	// MaxBatchSizeLimit is the largest [Config.MaxBatchSize]. Every key of a
	// batch holds an advisory lock in PostgreSQL's shared lock table, sized
	// by max_locks_per_transaction (64 per connection by default).
	MaxBatchSizeLimit = 256
	// DefaultTimeout is [Config.AcquireTimeout] and [Config.OperationTimeout]
	// when they are zero.
	DefaultTimeout = 3 * time.Second
	// MaxTimeout bounds both timeouts.
	MaxTimeout = 60 * time.Second
)

// ErrInvalidConfig is matched by every [ConfigError]. It is
// [ports.ErrInvalidConfig], the contract every store shares.
var ErrInvalidConfig = ports.ErrInvalidConfig

// Config tunes a PostgreSQL [Store]. The zero value is the default
// configuration.
type Config struct {
	// Schema is the PostgreSQL schema holding Runlimit's tables and
	// functions: the one the migrations were applied to. Every statement
	// names them in full in it, whatever the session's search_path. 1 to 63
	// ASCII letters, digits and underscores, used as written (see
	// [migrations.CheckSchema]). Default "public".
	Schema string
	// RowsPerShard is how many counters each of the 256 capacity shards may
	// hold, expired ones not yet cleaned up included. A new key whose shard
	// is full is denied for storage capacity. 1 to 65,536. Default 4,096.
	RowsPerShard int
	// MaxBatchSize is the largest batch Admit accepts. 1 to 256. Default 32.
	MaxBatchSize int
	// AcquireTimeout bounds the wait for a connection from the pool. At most
	// 60 s. Default 3 s.
	AcquireTimeout time.Duration
	// OperationTimeout is the budget of one operation once it holds a
	// connection; statement, lock and idle-in-transaction timeouts are set
	// from what is left of it. At most 60 s. Default 3 s.
	OperationTimeout time.Duration
	// Protocol is how a single check (AdmitCheck, or Admit with a batch of
	// one) is admitted: [Locked], the default, or [Optimistic]. Batches of
	// two or more checks always take the locked protocol.
	Protocol Protocol
}

// Protocol is the admission protocol a [Store] uses for single checks.
type Protocol uint8

const (
	// Locked is the protocol of every batch: advisory lock, row lock,
	// ledger lock of a new key, then the clock sample, evaluation, write
	// and COMMIT, in one transaction over two pipelined round trips.
	Locked Protocol = iota
	// Optimistic admits a single check without holding a lock across round
	// trips: round trip 1 sets its timeouts, then reads the counter (or the
	// ledger count of a key without one) and the clock in one statement;
	// round trip 2, for an allowed check only, sets its timeouts and
	// writes in one implicit transaction a new state
	// that applies only while the counter is still the one read (a new key
	// also takes its advisory and ledger locks, in the locked protocol's
	// order, and applies only while its shard has room). A write that
	// applied nothing met a concurrent admission: the check starts again,
	// and after a second conflict it takes the locked protocol, which
	// always makes progress. Both protocols serve one database at once,
	// with replicas and Rust Runlimit services on either. See the package
	// documentation for what it costs and saves.
	Optimistic
)

// String returns "locked" or "optimistic".
func (p Protocol) String() string {
	switch p {
	case Locked:
		return "locked"
	case Optimistic:
		return "optimistic"
	}
	return fmt.Sprintf("Protocol(%d)", uint8(p))
}

// MarshalText returns the name String returns, so that a Config reads
// and writes its Protocol by name in JSON and other text formats. A value
// that is neither protocol is an error.
func (p Protocol) MarshalText() ([]byte, error) {
	if p > Optimistic {
		return nil, &ConfigError{Field: "Protocol", Value: p, Want: "Locked or Optimistic"}
	}
	return []byte(p.String()), nil
}

// UnmarshalText sets p from a name ParseProtocol accepts.
func (p *Protocol) UnmarshalText(text []byte) error {
	v, err := ParseProtocol(string(text))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// ParseProtocol returns the Protocol named name: "locked" or "optimistic"
// (an empty name is Locked).
func ParseProtocol(name string) (Protocol, error) {
	switch name {
	case "", "locked":
		return Locked, nil
	case "optimistic":
		return Optimistic, nil
	}
	// The name is not repeated: it may be anything but a protocol's name,
	// such as a database URL written into the wrong field.
	return 0, &ConfigError{Field: "Protocol", Value: "rejected (not a protocol name)", Want: `"locked" or "optimistic"`}
}

// ConfigError reports a [Config] field outside its bounds. It unwraps to
// [ErrInvalidConfig].
type ConfigError struct {
	Field string // the Config field, such as "RowsPerShard"
	// Value is the rejected value, except for a rejected name (a Schema,
	// a Protocol's name), which may be anything, such as a database URL
	// holding a password written into the wrong field: Value then says
	// what is wrong with it without repeating it.
	Value any
	Want  string // the bound it breaks, such as "1 to 65536"
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("runlimit: invalid postgres store config: %s is %v, want %s", e.Field, e.Value, e.Want)
}

// Unwrap returns [ErrInvalidConfig].
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// withDefaults validates cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Schema == "" {
		cfg.Schema = migrations.DefaultSchema
	} else if err := migrations.CheckSchema(cfg.Schema); err != nil {
		// The name is not repeated, only what is wrong with it: a name
		// that fails the check may be anything, such as a database URL
		// written into the wrong field.
		problem := strings.TrimPrefix(err.Error(), migrations.ErrInvalidSchema.Error()+": ")
		return cfg, &ConfigError{Field: "Schema", Value: "rejected (" + problem + ")",
			Want: fmt.Sprintf("1 to %d ASCII letters, digits and underscores, not starting with a digit or pg_ (empty means %q)",
				migrations.MaxSchemaLength, migrations.DefaultSchema)}
	}
	switch {
	case cfg.RowsPerShard == 0:
		cfg.RowsPerShard = DefaultRowsPerShard
	case cfg.RowsPerShard < 1 || cfg.RowsPerShard > MaxRowsPerShard:
		return cfg, &ConfigError{Field: "RowsPerShard", Value: cfg.RowsPerShard,
			Want: fmt.Sprintf("1 to %d (0 means %d)", MaxRowsPerShard, DefaultRowsPerShard)}
	}
	switch {
	case cfg.MaxBatchSize == 0:
		cfg.MaxBatchSize = domain.DefaultMaxBatchSize
	case cfg.MaxBatchSize < 1 || cfg.MaxBatchSize > MaxBatchSizeLimit:
		return cfg, &ConfigError{Field: "MaxBatchSize", Value: cfg.MaxBatchSize,
			Want: fmt.Sprintf("1 to %d (0 means %d)", MaxBatchSizeLimit, domain.DefaultMaxBatchSize)}
	}
	if cfg.Protocol > Optimistic {
		return cfg, &ConfigError{Field: "Protocol", Value: cfg.Protocol, Want: "Locked or Optimistic"}
	}
	var err error
	if cfg.AcquireTimeout, err = timeout("AcquireTimeout", cfg.AcquireTimeout); err != nil {
		return cfg, err
	}
	if cfg.OperationTimeout, err = timeout("OperationTimeout", cfg.OperationTimeout); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func timeout(field string, d time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return DefaultTimeout, nil
	case d < 0 || d > MaxTimeout:
		return 0, &ConfigError{Field: field, Value: d,
			Want: fmt.Sprintf("more than 0 and at most %v (0 means %v)", MaxTimeout, DefaultTimeout)}
	}
	return d, nil
}
