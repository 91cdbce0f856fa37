package ports

import (
	"context"

	"github.com/runlimit/runlimit/domain"
)

// Store applies batches of checks atomically. It stores and locks; the domain
// decides.
//
// Admit follows the protocol documented on [domain.Batch]: lock every key of
// the batch in a deterministic order (so that batches naming the same keys
// in opposite orders cannot deadlock), observe each key's state under the
// lock together with whether an absent key can get a storage slot, sample the
// store's authoritative clock after every lock is held, call
// [domain.Batch.Evaluate], and persist [domain.Batch.Next] for every check
// only if Evaluate reports commit. The store's time must never go backwards
// for a key.
//
// # Optimistic stores
//
// A store need not hold locks across an admission. An optimistic store (a
// Redis WATCH/MULTI transaction, a DynamoDB conditional write, SQL with a
// version column) meets the same protocol this way:
//
//  1. read every key of the batch, and whatever its capacity bound depends
//     on, in one consistent read, and Observe them;
//  2. read the store's clock after that read and Evaluate;
//  3. write every Next in one atomic conditional write that applies only if
//     nothing it read has changed since; a denial writes nothing, but is
//     confirmed by the same condition (or by a read that proves nothing
//     changed); a store that reads its keys and then its clock in one
//     atomic step (a server-side script that ends by reading the
//     server's time) has that proof already: its denial was true of one
//     state at one time, and needs no confirmation;
//  4. on a conflict, start again from step 1.
//
// A Batch may be evaluated only once, so each attempt evaluates a scratch
// batch built from the same checks ([domain.NewBatch]) and the attempt that
// stands is replayed on the caller's batch; AdmitCheck may call
// [domain.EvaluateCheck] on every attempt. Nothing is written before the
// conditional write, so a failed attempt consumes nothing. The
// examples/casstore store in this repository works this way and passes the
// conformance suite.
//
// Admit returns an error only for a structural problem the store detects
// (for example a batch larger than it can hold) or a backend failure; a
// denial is a decision, read by the caller from the batch. Errors should
// implement [QuotaConsumer] to say whether quota may have been consumed.
//
// # What a store must get right
//
// Before any work Admit checks, in this order, and answers the first that
// applies, consuming nothing:
//
//  1. a batch that is not ready ([domain.Batch.Ready]): an error matching
//     Ready's (a nil or unprepared batch is the caller's mistake, matching
//     [domain.ErrInvalidInput]);
//  2. a nil ctx: an error matching [ErrNilContext];
//  3. a closed store ([Closer]): an error matching [ErrClosed];
//  4. a done ctx: an error matching ctx.Err() whose MayHaveConsumedQuota
//     answers false, since nothing was tried.
//
// Each absent key of a batch needs a storage slot of its own: a store that
// counts free slots sets [domain.Observation.Full] for the batch's new keys
// beyond the free slots of their partition, not only once the partition is
// already full. A stored key, even an expired one, renews in its own slot.
//
// The conformance suite (github.com/runlimit/runlimit/conformance) checks
// all of this, and names the rule a store breaks.
type Store interface {
	Admit(ctx context.Context, batch *domain.Batch) error
}

// Cleaner is implemented by stores that can remove expired counters on
// demand. CleanupExpired removes at most max expired counters and returns how
// many it removed. It never removes an active counter. A call that succeeds
// and removes fewer than max leaves no counter that had expired at its time,
// except one an admission held meanwhile: a maintenance loop drains a store
// by calling it until a call removes fewer than it asked for.
//
// Before any work it checks, in this order, and answers the first that
// applies, removing nothing:
//
//  1. a negative max: 0 and an error matching [ErrNegativeMax] (and so
//     [domain.ErrInvalidInput]), whatever ctx or the store's state;
//  2. a nil ctx: 0 and an error matching [ErrNilContext];
//  3. a closed store ([Closer]): 0 and an error matching [ErrClosed];
//  4. a max of 0: (0, nil), without reaching the backend or looking at
//     ctx, which can only stop work that was asked for;
//  5. a done ctx: 0 and an error matching ctx.Err().
//
// The caller's mistakes come first, as for Admit, so a maintenance loop
// misconfigured with a negative max hears so whatever else is wrong.
type Cleaner interface {
	CleanupExpired(ctx context.Context, max int) (int, error)
}

// StatsReporter is implemented by stores that can report their occupancy.
// Beside an error, such as one matching [ErrClosed], Stats returns the zero
// Stats.
type StatsReporter interface {
	Stats(ctx context.Context) (Stats, error)
}

// Closer is implemented by stores that hold resources. After Close, Admit
// (and AdmitCheck, CleanupExpired whatever its max, and Stats) fail closed
// with an error matching [ErrClosed] that did not consume quota, unless the
// call was a caller's mistake (invalid input, a nil context, a negative
// cleanup max). Close releases only what
// the store opened itself.
type Closer interface {
	Close() error
}

// Stats is a store's occupancy. It never contains key bytes.
type Stats struct {
	// Entries counts stored counters, expired ones not yet removed included.
	Entries int64
	// Capacity is the hard maximum of stored counters.
	Capacity int64
	// Shards is the number of capacity partitions.
	Shards int
	// Headroom holds the free slots of each partition, by partition index
	// (the index conformance.Instance.PartitionOf returns for a key).
	Headroom []int64
}

// MinHeadroom returns the free slots of the fullest partition, the first to
// deny new keys, or 0 when there are no partitions.
func (s Stats) MinHeadroom() int64 {
	if len(s.Headroom) == 0 {
		return 0
	}
	m := s.Headroom[0]
	for _, h := range s.Headroom[1:] {
		m = min(m, h)
	}
	return m
}

// CheckAdmitter is implemented by stores with a faster path for a single
// check. AdmitCheck must behave exactly as Admit does for a batch holding
// only check: lock its key, observe it, evaluate at the store's clock, and
// persist the new counter only on commit. A store that runs both through
// one flow makes the check a batch of one with [domain.Batch.ResetSingle];
// [domain.EvaluateCheck] evaluates a lone check without a batch. Limiters use it for single checks; the conformance suite
// runs single checks through it and batches through Admit.
//
// An invalid check is answered first, with [domain.Check.Validate]'s
// error, whatever ctx or the store's state, as Admit answers
// [domain.Batch.Ready]'s first. Beside an error AdmitCheck returns the zero
// Decision: an error fails closed, and a decision travelling with it (a
// cached one, or one whose write was given up) could be read as a permit.
type CheckAdmitter interface {
	AdmitCheck(ctx context.Context, check domain.Check) (domain.Decision, error)
}
