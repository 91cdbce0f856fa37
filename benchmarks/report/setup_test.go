package report_test

import (
	"math"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
)

var nan = math.NaN()

// peerRows is a small comparison: two Runlimit rows, two peers, every
// scenario, and a peer missing from the parallel one.
func peerRows() []benchcsv.PeerRow {
	row := func(scenario, id, label string, ns, bytesPerKey float64) benchcsv.PeerRow {
		r := benchcsv.PeerRow{Scenario: scenario, Contender: id, Label: label, Procs: 1, NsPerOp: ns,
			AllocsPerOp: 0, BytesPerOp: 0, BytesPerKey: nan, Runs: 4}
		if scenario == benchcsv.Parallel {
			r.Procs = 2
		}
		if scenario == benchcsv.Retained {
			r.NsPerOp, r.AllocsPerOp, r.BytesPerOp, r.BytesPerKey = nan, nan, nan, bytesPerKey
		}
		return r
	}
	return []benchcsv.PeerRow{
		row(benchcsv.Hot, "runlimit-hmac", "Runlimit, HMAC per check", 300, 0),
		row(benchcsv.Hot, "runlimit", "Runlimit, once", 100, 0),
		row(benchcsv.Hot, "golimiter", "go-limiter", 80, 0),
		row(benchcsv.Hot, "xtime", "x/time <rate> & map", 125, 0),
		row(benchcsv.Keys10k, "runlimit", "Runlimit, once", 150, 0),
		row(benchcsv.Keys10k, "golimiter", "go-limiter", 100, 0),
		row(benchcsv.Parallel, "runlimit", "Runlimit, once", 60, 0),
		row(benchcsv.Retained, "runlimit-hmac", "Runlimit, HMAC per check", 0, 150),
		row(benchcsv.Retained, "golimiter", "go-limiter", 0, 200),
	}
}

// pgRow is contender id's row at callers callers, labelled "the <id>".
func pgRow(callers int, id string, rate float64) benchcsv.PGRow {
	return benchcsv.PGRow{Callers: callers, Contender: id, Label: "the " + id, Rate: rate,
		P50ms: 1, P99ms: 2, ClientCPUus: 40, ServerCPUus: 150}
}

// pgRows is a small PostgreSQL comparison: every contender at 32 callers,
// the floor and both store modes at 8, the floor and the locked store at 1.
func pgRows(optimistic32 float64) []benchcsv.PGRow {
	return []benchcsv.PGRow{
		pgRow(32, benchcsv.Naive, 16000),
		pgRow(32, benchcsv.Store, 8000),
		pgRow(32, benchcsv.Floor, 10000),
		pgRow(32, benchcsv.Stepwise, 4000),
		pgRow(32, benchcsv.Redis, 32000),
		pgRow(32, benchcsv.Optimistic, optimistic32),
		pgRow(8, benchcsv.Floor, 8000),
		pgRow(8, benchcsv.Store, 6400),
		pgRow(8, benchcsv.Optimistic, 7600),
		pgRow(1, benchcsv.Store, 2000),
		pgRow(1, benchcsv.Floor, 2500),
	}
}
