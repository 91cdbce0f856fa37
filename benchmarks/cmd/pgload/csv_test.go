package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
)

func TestWriteCSVReadsBackEveryMeasurement(t *testing.T) {
	t.Parallel()
	results := []measurement{
		{callers: 32, id: "store", limiter: "postgres.Store, locked protocol (default)", rate: 7710.5, p50: 3740 * time.Microsecond,
			p99: 12210 * time.Microsecond, clientCPU: 55 * time.Microsecond, serverCPU: 186 * time.Microsecond},
		{callers: 32, id: "redis", limiter: "go-redis/redis_rate (Redis, GCRA)", rate: 30000, p50: time.Millisecond,
			p99: 2 * time.Millisecond, clientCPU: 20 * time.Microsecond},
		{callers: 8, id: "optimistic", limiter: "postgres.Store, optimistic protocol", rate: 9000, p50: time.Millisecond,
			p99: 1500 * time.Microsecond, clientCPU: time.Microsecond, serverCPU: 2 * time.Microsecond},
	}
	path := filepath.Join(t.TempDir(), "pgload.csv")
	require.NoError(t, writeCSV(path, results))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := benchcsv.ReadPG(f)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	require.Equal(t, benchcsv.PGRow{Callers: 32, Contender: benchcsv.Store, Label: "postgres.Store, locked protocol (default)", Rate: 7710.5,
		P50ms: 3.74, P99ms: 12.21, ClientCPUus: 55, ServerCPUus: 186}, rows[0])
	require.True(t, math.IsNaN(rows[1].ServerCPUus), "a server CPU pgload could not read is empty, not zero")
	require.Equal(t, benchcsv.PGRow{Callers: 8, Contender: benchcsv.Optimistic, Label: "postgres.Store, optimistic protocol", Rate: 9000,
		P50ms: 1, P99ms: 1.5, ClientCPUus: 1, ServerCPUus: 2}, rows[2])
}
