// Package redisstore is a small Runlimit store over one Redis 7 server,
// written only against Runlimit's public API (SPEC, the ports and domain
// packages, the conformance suite's docs). It is a test vehicle for the
// conformance suite and a worked example of an adapter whose clock is the
// server's, not a product: it has no pooling or timeout policy of its own,
// and no Redis Cluster support (the scripts reach keys of several
// partitions, and the cleanup script names keys it reads from an index).
//
// # Layout
//
// Under the configured prefix P a store keeps:
//
//   - P "c:" and the 64 raw counter-key bytes: one counter, the decimal
//     text "used:start:expires" (times in microseconds, see below);
//   - P "i:" and a partition's number: a sorted set of the partition's
//     stored counters, all at score 0 so that it orders by member, each
//     member the counter's expiry in 20 digits, ":" and its key bytes: the
//     earliest expiry (a capacity retry time) and the expired counters
//     (cleanup) are a range of it;
//   - P "n:" and a partition's number: the partition's stored counters,
//     expired ones included, which its capacity bound is checked against;
//   - P "t": the latest time any admission or cleanup read, the floor under
//     the server's clock.
//
// No key has a native expiry: an expired counter keeps its slot until
// [Store.CleanupExpired] removes it, as SPEC asks.
//
// # Time
//
// The clock is the server's TIME, read inside the same script as the keys
// it judges, after them, and clamped by P "t" so that it never goes
// backwards. Lua's numbers are float64, so the scripts never compute a
// time: a [domain.Instant] here counts microseconds from an epoch 10^18 µs
// before Unix's, so that "01", the seconds padded to 12 digits and the
// microseconds padded to 6 is the time as decimal text, 20 digits long as
// every time in the index is, whose byte order is its numeric order (a
// window of the longest length ends some 285 years on, and a test that
// moves stored times back by as much still finds them positive). Go parses and formats every number; the domain decides.
//
// # An admission
//
// Each attempt reads every key of the batch, the count of stored counters
// and the earliest expiry of each partition it touches, and the clock, in
// one script, evaluates a scratch
// batch at that time in Go, and, when the batch is allowed, writes it with
// a second script that applies only if every key still holds the text that
// was read and the new keys still fit; otherwise the attempt starts again.
// A denial needs no confirmation: the read was one state at one time.
package redisstore
