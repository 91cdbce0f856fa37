// Package mapstore is a complete Runlimit store in one map and one mutex,
// written only against Runlimit's public API. It is an example to copy when
// writing an adapter over storage a host already runs, and it proves itself
// the way any adapter should: its tests run the [conformance] suite.
//
// # Writing a store
//
// A store implements [ports.Store]: for each batch it first asks
// [domain.Batch.Ready] whether the batch is its to drive, so that a caller's
// mistake is reported as such before any work, then locks every key,
// reports what it holds for each with [domain.Batch.Observe], reads its
// clock, calls [domain.Batch.Evaluate], and writes [domain.Batch.Next] for
// every check only when Evaluate says to commit. The domain decides; the
// store only keeps and locks. One mutex locks every key at once here, so
// there is no lock order to get wrong.
//
// # Limits of the example
//
// Everything lives in one process. Expired counters keep their slots until
// [Store.CleanupExpired] removes them, so a host must call it periodically
// (the memory adapter instead reclaims a few on every check).
//
// [conformance]: https://pkg.go.dev/github.com/runlimit/runlimit/conformance
package mapstore
