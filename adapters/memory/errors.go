package memory

import (
	"errors"
	"fmt"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// Errors of a memory [Store]. Every error the store returns fails closed:
// the request must not proceed. None of them ever consumed quota, because
// the store applies a batch entirely or not at all while holding its locks;
// each answers false to MayHaveConsumedQuota (see
// [github.com/runlimit/runlimit/ports.MayHaveConsumedQuota]).
var (
	// ErrClosed: the store was closed. It is [ports.ErrClosed], the
	// contract every store shares.
	ErrClosed = ports.ErrClosed
	// ErrPoisoned: a shard the operation needs was poisoned by a panic.
	ErrPoisoned = errors.New("runlimit: memory store shard is poisoned")
	// ErrNegativeMax: CleanupExpired was asked to remove a negative number
	// of entries. A caller mistake: it is [ports.ErrNegativeMax], which
	// matches [domain.ErrInvalidInput].
	ErrNegativeMax = ports.ErrNegativeMax
)

// OpError reports why a store operation failed before it changed anything:
// the store is closed ([ErrClosed]), the context was done (the context's
// error), a bad argument, or a batch driven out of protocol
// ([domain.ErrBatchProtocol]). It never names a key.
type OpError struct {
	Op  string // "admit", "cleanup" or "stats"
	Err error
}

func (e *OpError) Error() string { return fmt.Sprintf("runlimit: memory store %s: %v", e.Op, e.Err) }

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// MayHaveConsumedQuota returns false: the operation changed nothing.
func (e *OpError) MayHaveConsumedQuota() bool { return false }

// PoisonedShardError reports that a panic struck while the named shard was
// locked. The shard fails closed from then on, keeping its counters, until
// [Store.RecoverPoisoned] empties it. It unwraps to [ErrPoisoned].
type PoisonedShardError struct {
	Shard int
}

func (e *PoisonedShardError) Error() string {
	return fmt.Sprintf("runlimit: memory store shard %d is poisoned by an earlier panic", e.Shard)
}

// Unwrap returns [ErrPoisoned].
func (e *PoisonedShardError) Unwrap() error { return ErrPoisoned }

// MayHaveConsumedQuota returns false: a poisoned shard is never touched.
func (e *PoisonedShardError) MayHaveConsumedQuota() bool { return false }

// ShardOverflowError reports a batch that puts more distinct keys on one
// shard than the shard can ever hold, so it could never be allowed. It is a
// structural error found before any shard is locked: it unwraps to
// [domain.ErrInvalidBatch] and matches [domain.ErrInvalidInput].
type ShardOverflowError struct {
	Shard    int // the shard index
	Count    int // distinct keys of the batch on that shard
	Capacity int // the shard's fixed capacity
}

func (e *ShardOverflowError) Error() string {
	return fmt.Sprintf("runlimit: invalid batch: %d checks fall on memory store shard %d, which holds at most %d keys",
		e.Count, e.Shard, e.Capacity)
}

// Unwrap returns [domain.ErrInvalidBatch].
func (e *ShardOverflowError) Unwrap() error { return domain.ErrInvalidBatch }

// Is reports whether target is [domain.ErrInvalidInput].
func (e *ShardOverflowError) Is(target error) bool { return target == domain.ErrInvalidInput }

// MayHaveConsumedQuota returns false: the batch never reached a shard.
func (e *ShardOverflowError) MayHaveConsumedQuota() bool { return false }
