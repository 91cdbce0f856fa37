// Package report turns the rows of the two comparisons (see package
// benchcsv) into what the README shows: markdown tables with ratios and a
// hand-written SVG bar chart that names the machine, the date and the
// command that produced it.
//
// # Ratios
//
// [PeerRatios] divides each Runlimit row by each peer in every scenario:
// time per check, or bytes retained per key, so below 1.00 Runlimit is
// ahead. [PGRatios] divides admission rates at each caller count: each of
// the store's two modes (the default, locked protocol and the optimistic
// one) by the protocol floor and by the one-round-trip-per-statement
// protocol, the locked store by Redis and by the naive upsert, and the
// optimistic mode by the locked one, so above 1.00 the numerator is faster.
// [WritePGRatios] adds two verdicts computed from them: whether the
// optimistic mode reaches [StoreModeGain] at 32 callers, and whether each
// mode reaches [FloorBar] at 8 and at 32 callers.
//
// # Chart
//
// [WriteSVG] draws one horizontal bar per row: a panel per peer scenario
// (lower is better) and a panel per caller count (higher is better). Bars
// carry class="bar", so tools and tests can count them.
package report
