// Package report turns the rows of the two comparisons (see package
// benchcsv) into what the README shows: markdown tables with ratios and a
// hand-written SVG bar chart that names the machine, the date and the
// command that produced it.
//
// # Ratios
//
// [PeerRatios] divides each Runlimit row by each peer in every scenario:
// time per check, or bytes retained per key, so below 1.00 Runlimit is
// ahead. [PGRatios] divides admission rates at each caller count: the store
// by the protocol floor, by the one-round-trip-per-statement protocol, by
// Redis and by the naive upsert, and the optimistic contender by the store,
// so above 1.00 the numerator is faster.
//
// # Chart
//
// [WriteSVG] draws one horizontal bar per row: a panel per peer scenario
// (lower is better) and a panel per caller count (higher is better). Bars
// carry class="bar", so tools and tests can count them.
package report
