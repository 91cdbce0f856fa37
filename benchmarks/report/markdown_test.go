package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
	require.Contains(t, md, "| 32 | the store | 8,000 | 1.00 ms | 2.00 ms | 40 µs | 150 µs | 0 |")
	require.Contains(t, md, "| 1 | 0.80 | – | – | – | – |")
	require.Contains(t, md, "| 32 | 0.80 | 2.00 | 0.25 | 0.50 | 1.20 |")
	require.Contains(t, md, "runs at 1.20x the store's rate: at or above the 1.15x")

	// Callers ascend in the measurements table whatever the CSV's order.
	require.Less(t, strings.Index(md, "| 1 | the store |"), strings.Index(md, "| 32 | the naive |"))
}

func TestWritePGRatiosVerdict(t *testing.T) {
	t.Parallel()
	for rate, want := range map[float64]string{
		9200: "1.15x the store's rate: at or above",
		9100: "1.14x the store's rate: short of",
	} {
		var buf bytes.Buffer
		report.WritePGRatios(&buf, pgRows(rate))
		require.Contains(t, buf.String(), want)
	}
	var buf bytes.Buffer
	report.WritePGRatios(&buf, pgRows(9000)[:5])
	require.NotContains(t, buf.String(), "optimistic protocol runs at", "no verdict without the contender")
}
