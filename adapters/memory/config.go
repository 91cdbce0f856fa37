package memory

import (
	"fmt"
	"math"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/nilcheck"
	"github.com/runlimit/runlimit/ports"
)

// Bounds on a [Config].
const (
	// DefaultCleanupPerCheck is how many expired entries a check removes from
	// its shard when [Config.CleanupPerCheck] is zero.
	DefaultCleanupPerCheck = 8
	// MaxShards is the largest shard count. Every shard costs a lock and a
	// cache-line-padded header up front, so the count is bounded even when
	// MaxKeys is huge.
	MaxShards = 1 << 16
	// MaxShardCapacity is the most keys one shard can hold: slots are
	// numbered with 32-bit integers to keep shard storage small and free of
	// pointers.
	MaxShardCapacity = math.MaxInt32
)

// ErrInvalidConfig is matched by every [ConfigError]. It is
// [ports.ErrInvalidConfig], the contract every store shares.
var ErrInvalidConfig = ports.ErrInvalidConfig

// Config sizes a memory [Store]. Only MaxKeys is required.
type Config struct {
	// MaxKeys is the hard maximum of stored counters, expired ones not yet
	// removed included. It is split across shards: each shard holds
	// MaxKeys/Shards keys and the first MaxKeys%Shards shards hold one more.
	// Required, at least 1.
	MaxKeys int
	// Shards is the number of independently locked partitions. More shards
	// mean less lock contention, but a shard that fills up denies new keys
	// even while other shards have room. At most MaxKeys and [MaxShards].
	// Default 1.
	Shards int
	// CleanupPerCheck is how many expired entries each check removes from
	// its shard before it is evaluated, oldest expiry first. At least 1.
	// Default 8 ([DefaultCleanupPerCheck]).
	CleanupPerCheck int
	// MaxBatchSize is the largest batch Admit accepts. At least 1. Default 32
	// ([domain.DefaultMaxBatchSize]).
	MaxBatchSize int
	// Clock is the store's time source. Default: the process's monotonic
	// clock, measured from the moment New is called. A nil pointer or func
	// in the interface, such as a nil *ManualClock, or a zero CoarseClock
	// is a [*ConfigError].
	Clock Clock
}

// ConfigError reports a [Config] field outside its bounds. It unwraps to
// [ErrInvalidConfig].
type ConfigError struct {
	Field string // the Config field, such as "Shards"
	Value int    // the rejected value
	Want  string // the bound it breaks, such as "at least 1"
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("runlimit: invalid memory store config: %s is %d, want %s", e.Field, e.Value, e.Want)
}

// Unwrap returns [ErrInvalidConfig].
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// MayHaveConsumedQuota returns false: no store was built.
func (e *ConfigError) MayHaveConsumedQuota() bool { return false }

// withDefaults validates cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.MaxKeys < 1 {
		return cfg, &ConfigError{Field: "MaxKeys", Value: cfg.MaxKeys, Want: "at least 1"}
	}
	switch {
	case cfg.Shards == 0:
		cfg.Shards = 1
	case cfg.Shards < 0:
		return cfg, &ConfigError{Field: "Shards", Value: cfg.Shards, Want: "at least 1 (0 means 1)"}
	case cfg.Shards > MaxShards:
		return cfg, &ConfigError{Field: "Shards", Value: cfg.Shards, Want: fmt.Sprintf("at most %d", MaxShards)}
	case cfg.Shards > cfg.MaxKeys:
		return cfg, &ConfigError{Field: "Shards", Value: cfg.Shards, Want: fmt.Sprintf("at most MaxKeys (%d)", cfg.MaxKeys)}
	}
	// The first shards hold one key more than the quotient; the largest
	// capacity is the quotient rounded up.
	if largest := cfg.MaxKeys/cfg.Shards + min(cfg.MaxKeys%cfg.Shards, 1); largest > MaxShardCapacity {
		return cfg, &ConfigError{Field: "MaxKeys", Value: cfg.MaxKeys,
			Want: fmt.Sprintf("at most %d keys per shard (%d shards)", MaxShardCapacity, cfg.Shards)}
	}
	switch {
	case cfg.CleanupPerCheck == 0:
		cfg.CleanupPerCheck = DefaultCleanupPerCheck
	case cfg.CleanupPerCheck < 0:
		return cfg, &ConfigError{Field: "CleanupPerCheck", Value: cfg.CleanupPerCheck, Want: "at least 1 (0 means 8)"}
	}
	switch {
	case cfg.MaxBatchSize == 0:
		cfg.MaxBatchSize = domain.DefaultMaxBatchSize
	case cfg.MaxBatchSize < 0:
		return cfg, &ConfigError{Field: "MaxBatchSize", Value: cfg.MaxBatchSize, Want: "at least 1 (0 means 32)"}
	}
	// A nil *ManualClock in the interface, or a CoarseClock that
	// NewCoarseClock did not start, would panic on the first check.
	if cfg.Clock != nil {
		if nilcheck.IsNil(cfg.Clock) {
			return cfg, &ConfigError{Field: "Clock", Want: "a clock, not a nil pointer (nil Clock means the default)"}
		}
		if c, ok := cfg.Clock.(*CoarseClock); ok && c.coarseTicker == nil {
			return cfg, &ConfigError{Field: "Clock", Want: "a CoarseClock from NewCoarseClock, not a zero one"}
		}
	}
	return cfg, nil
}
