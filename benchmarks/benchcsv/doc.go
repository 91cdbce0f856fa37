// Package benchcsv reads and writes the CSV files of the two comparisons in
// this module, so that the tools that measure (cmd/peerbench, cmd/pgload)
// and the tool that draws (cmd/benchchart) agree on one layout.
//
// # Peers
//
// peers.csv has one row per scenario and contender, the medians of every
// run:
//
//	scenario,contender,label,procs,ns_per_op,allocs_per_op,bytes_per_op,bytes_per_key,runs
//	hot,runlimit,"Runlimit, key derived once",1,105.3,0,0,,6
//
// Scenarios are [Hot], [Keys10k], [Parallel] and [Retained]. A metric a
// scenario does not measure is an empty cell, read as NaN: the retained
// scenario has only bytes_per_key, the others everything but it.
//
// # PostgreSQL
//
// pgload.csv has one row per caller count and contender:
//
//	callers,contender,label,admissions_per_s,p50_ms,p99_ms,client_cpu_us,server_cpu_us
//	32,store,"postgres.Store, locked protocol (default)",7710,3.74,12.21,55,186
//
// Contenders are [Naive], [Stepwise], [Floor], [Store], [Optimistic] and
// [Redis]. server_cpu_us is empty when the server's CPU could not be read.
package benchcsv
