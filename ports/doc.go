// Package ports defines the seams between Runlimit's rules and the world:
// [Store], which storage adapters implement, and [Limiter], which host
// applications call. Optional store capabilities ([CheckAdmitter],
// [Cleaner], [StatsReporter], [ReadinessChecker], [Closer]) are small
// interfaces found by type assertion, as io/fs does.
//
// # Errors
//
// A store error always fails closed: the request must not proceed. Whether
// the failed operation may still have consumed quota (a commit whose outcome
// is unknown) is answered by [MayHaveConsumedQuota], without importing the
// adapter that produced the error: a store's errors say so by implementing
// [QuotaConsumer].
package ports
