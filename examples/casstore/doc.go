// Package casstore is a complete Runlimit store that takes no lock across
// an admission: it reads versioned entries, decides at its clock, and
// writes only if nothing it read has changed since, starting again when
// something has. Written only against Runlimit's public API, it is the
// example to copy for an adapter over a backend with conditional writes:
// Redis (WATCH, then MULTI/EXEC), DynamoDB (a transaction with condition
// checks), or SQL with a version column (UPDATE ... WHERE version = $n,
// retried when no row matched). Its tests run the [conformance] suite,
// races and all.
//
// # The optimistic protocol
//
// The port describes an admission with locks: lock every key, observe,
// read the clock, evaluate, write on commit, unlock. An optimistic store
// keeps the same promise with versions instead of locks:
//
//  1. Read every key of the batch, and whatever the capacity bound depends
//     on (here, one occupancy row), in one consistent read. A key's
//     observation is its counter; a new key needs a free slot, claimed in
//     caller order.
//  2. Read the store's clock after that read, and evaluate. The domain lets
//     a [domain.Batch] be evaluated once, so each attempt evaluates a
//     scratch batch built from the same checks ([domain.NewBatch]); the
//     single-check path calls [domain.EvaluateCheck], which may be called
//     again.
//  3. Write every new counter in one atomic conditional write that applies
//     only if every entry read, and the occupancy when new keys join, still
//     has the version that was read. A denial writes nothing, but is
//     confirmed by the same condition, so that it was true of one state of
//     the store (a cleanup may have freed the slot it was refused).
//  4. On a conflict, start again from 1. On success, replay the winning
//     observations and time on the caller's batch, which decides exactly
//     as the scratch batch did.
//
// Time never goes backwards for a key: every attempt reads the clock after
// the state it judges, and the clock is clamped to the latest time any
// store over the same rows read ([Store.Replica]). Nothing is written before the atomic write, so an admission that fails
// (a cancelled context) consumed nothing.
//
// Under contention an optimistic store retries instead of waiting: the
// conformance suite's races, which hold admissions inside the clock read,
// make it conflict on every run. [Store.Conflicts] counts the retries.
//
// # Limits of the example
//
// Everything lives in one process, and the occupancy row is one hot row
// that every new key writes: a real backend would split it per partition.
// Expired counters keep their slots until [Store.CleanupExpired] removes
// them.
//
// [conformance]: https://pkg.go.dev/github.com/runlimit/runlimit/conformance
package casstore
