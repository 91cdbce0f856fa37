package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
	"github.com/runlimit/runlimit/benchmarks/report"
)

func TestWriteMarkdownTablesAndRatios(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, report.WriteMarkdown(&buf, meta, peerRows(), pgRows(9600)))
	md := buf.String()

	require.Contains(t, md, "Measured on AMD EPYC, 2 vCPU, 2026-12-01, with `benchmarks/run.sh --count 6 <quiet>`.")
	require.Contains(t, md, "| contender | one hot key | 10,000 keys round-robin | parallel, keys of its own per goroutine (2 procs) | retained heap per key at 1,000,000 keys |")
	require.Contains(t, md, "| Runlimit, once | 100 ns, 0 allocs | 150 ns, 0 allocs | 60 ns, 0 allocs | – |")
	require.Contains(t, md, "| Runlimit, once / go-limiter | 1.25 | 1.50 | – | – |")
	require.Contains(t, md, "| Runlimit, HMAC per check / go-limiter | 3.75 | – | – | 0.75 |")
	require.Contains(t, md, "| callers | contender | admissions/s | p50 | p99 | client CPU/op | server CPU/op |\n|---:|---|---:|---:|---:|---:|---:|\n")
	require.Contains(t, md, "| 32 | the store | 8,000 | 1.00 ms | 2.00 ms | 40 µs | 150 µs |\n")
	require.Contains(t, md, "| callers | store / floor | optimistic store / floor | store / per-statement | optimistic store / per-statement "+
		"| store / Redis | store / naive | optimistic / store |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	require.Contains(t, md, "| 1 | 0.80 | – | – | – | – | – | – |\n")
	require.Contains(t, md, "| 8 | 0.80 | 0.95 | – | – | – | – | 1.19 |\n")
	require.Contains(t, md, "| 32 | 0.80 | 0.96 | 2.00 | 2.40 | 0.25 | 0.50 | 1.20 |\n")
	require.Contains(t, md, "\nAt 32 callers the optimistic store runs at 1.20x the locked store's rate: at or above the 1.15x a store mode needs.\n")
	require.Contains(t, md, "\nIssue 14's bar is 0.85x the protocol floor at 8 and at 32 callers: "+
		"the locked store falls short at 8 and 32 callers (0.80 at 8, 0.80 at 32); "+
		"the optimistic store reaches it at 8 and 32 callers (0.95 at 8, 0.96 at 32).\n")

	// Callers ascend in the measurements table whatever the CSV's order.
	require.Less(t, strings.Index(md, "| 1 | the store |"), strings.Index(md, "| 32 | the naive |"))
}

func TestWritePGRatiosGainVerdict(t *testing.T) {
	t.Parallel()
	for rate, want := range map[float64]string{
		9200:   "runs at 1.15x the locked store's rate: at or above the 1.15x",
		9100:   "runs at 1.14x the locked store's rate: short of the 1.15x",
		9199.9: "runs at 1.150x the locked store's rate: short of the 1.15x", // not rounded up to the bar
	} {
		var buf bytes.Buffer
		report.WritePGRatios(&buf, pgRows(rate))
		require.Contains(t, buf.String(), want)
	}
	var buf bytes.Buffer
	report.WritePGRatios(&buf, pgRows(9000)[:5])
	require.NotContains(t, buf.String(), "the locked store's rate", "no verdict without the optimistic store at 32 callers")
}

// floorRows returns the floor at 10,000 admissions/s at 8 and 32 callers
// and each store mode at the given rates; a zero rate leaves its row out.
func floorRows(store8, store32, optimistic8, optimistic32 float64) []benchcsv.PGRow {
	rows := []benchcsv.PGRow{pgRow(8, benchcsv.Floor, 10000), pgRow(32, benchcsv.Floor, 10000)}
	for _, r := range []benchcsv.PGRow{
		pgRow(8, benchcsv.Store, store8), pgRow(32, benchcsv.Store, store32),
		pgRow(8, benchcsv.Optimistic, optimistic8), pgRow(32, benchcsv.Optimistic, optimistic32),
	} {
		if r.Rate > 0 {
			rows = append(rows, r)
		}
	}
	return rows
}

func TestWritePGRatiosFloorVerdict(t *testing.T) {
	t.Parallel()
	const lead = "Issue 14's bar is 0.85x the protocol floor at 8 and at 32 callers: "
	for name, tc := range map[string]struct {
		rows []benchcsv.PGRow
		want string // the sentence, or "" for none
	}{
		"both modes, both counts": {
			rows: floorRows(8000, 7000, 9000, 8600),
			want: lead + "the locked store falls short at 8 and 32 callers (0.80 at 8, 0.70 at 32); " +
				"the optimistic store reaches it at 8 and 32 callers (0.90 at 8, 0.86 at 32).",
		},
		"at the bar reaches it": {
			rows: floorRows(8500, 8500, 0, 0),
			want: lead + "the locked store reaches it at 8 and 32 callers (0.85 at 8, 0.85 at 32).",
		},
		"just short is not rounded up": {
			rows: floorRows(8499, 9000, 0, 0),
			want: lead + "the locked store reaches it at 32 callers but not at 8 (0.850 at 8, 0.90 at 32).",
		},
		"at 8 only": {
			rows: floorRows(8000, 7000, 9000, 8000),
			want: lead + "the locked store falls short at 8 and 32 callers (0.80 at 8, 0.70 at 32); " +
				"the optimistic store reaches it at 8 callers but not at 32 (0.90 at 8, 0.80 at 32).",
		},
		"one count measured": {
			rows: floorRows(9000, 0, 8000, 0),
			want: lead + "the locked store reaches it at 8 callers (0.90 at 8, 32 not measured); " +
				"the optimistic store falls short at 8 callers (0.80 at 8, 32 not measured).",
		},
		"optimistic mode only": {
			rows: floorRows(0, 0, 0, 9100),
			want: lead + "the optimistic store reaches it at 32 callers (8 not measured, 0.91 at 32).",
		},
		"no store": {rows: floorRows(0, 0, 0, 0)},
		"no floor": {rows: []benchcsv.PGRow{pgRow(8, benchcsv.Store, 9000), pgRow(32, benchcsv.Optimistic, 9000)}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			report.WritePGRatios(&buf, tc.rows)
			if tc.want == "" {
				require.NotContains(t, buf.String(), "Issue 14's bar")
				return
			}
			require.Contains(t, buf.String(), "\n"+tc.want+"\n")
		})
	}
}
