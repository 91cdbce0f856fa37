package benchcsv_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
)

func TestPeersRoundTrip(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	rows := []benchcsv.PeerRow{
		{Scenario: benchcsv.Hot, Contender: "runlimit", Label: `Runlimit, "once"`, Procs: 1, NsPerOp: 105.25, AllocsPerOp: 0, BytesPerOp: 0, BytesPerKey: nan, Runs: 6},
		{Scenario: benchcsv.Retained, Contender: "golimiter", Label: "go-limiter", Procs: 1, NsPerOp: nan, AllocsPerOp: nan, BytesPerOp: nan, BytesPerKey: 201.5, Runs: 4},
	}
	var buf bytes.Buffer
	require.NoError(t, benchcsv.WritePeers(&buf, rows))
	require.True(t, strings.HasPrefix(buf.String(), "scenario,contender,label,procs,ns_per_op,"))
	require.Contains(t, buf.String(), "retained,golimiter,go-limiter,1,,,,201.5,4\n")

	got, err := benchcsv.ReadPeers(&buf)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, rows[0].Label, got[0].Label)
	require.Equal(t, 105.25, got[0].NsPerOp)
	require.True(t, math.IsNaN(got[0].BytesPerKey))
	require.True(t, math.IsNaN(got[1].NsPerOp))
	require.Equal(t, 201.5, got[1].BytesPerKey)
	require.Equal(t, 4, got[1].Runs)
}

func TestPGRoundTrip(t *testing.T) {
	t.Parallel()
	rows := []benchcsv.PGRow{
		{Callers: 32, Contender: benchcsv.Store, Label: "postgres.Store, locked protocol (default)", Rate: 7710.4, P50ms: 3.74, P99ms: 12.21, ClientCPUus: 55, ServerCPUus: 186},
		{Callers: 32, Contender: benchcsv.Redis, Label: "redis_rate", Rate: 30000, P50ms: 1, P99ms: 2, ClientCPUus: 20, ServerCPUus: math.NaN()},
		{Callers: 8, Contender: benchcsv.Optimistic, Label: "postgres.Store, optimistic protocol", Rate: 9000, P50ms: 1, P99ms: 2, ClientCPUus: 20, ServerCPUus: 100},
	}
	var buf bytes.Buffer
	require.NoError(t, benchcsv.WritePG(&buf, rows))
	require.Equal(t, "callers,contender,label,admissions_per_s,p50_ms,p99_ms,client_cpu_us,server_cpu_us\n"+
		"32,store,\"postgres.Store, locked protocol (default)\",7710.4,3.74,12.21,55,186\n"+
		"32,redis,redis_rate,30000,1,2,20,\n"+
		"8,optimistic,\"postgres.Store, optimistic protocol\",9000,1,2,20,100\n", buf.String())
	got, err := benchcsv.ReadPG(&buf)
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, rows[0], got[0])
	require.True(t, math.IsNaN(got[1].ServerCPUus))
	got[1].ServerCPUus = 0
	require.Equal(t, benchcsv.PGRow{Callers: 32, Contender: benchcsv.Redis, Label: "redis_rate", Rate: 30000, P50ms: 1, P99ms: 2, ClientCPUus: 20}, got[1])
	require.Equal(t, rows[2], got[2])
}

func TestReadRejectsMalformedFiles(t *testing.T) {
	t.Parallel()
	const peerHeader = "scenario,contender,label,procs,ns_per_op,allocs_per_op,bytes_per_op,bytes_per_key,runs\n"
	const pgHeader = "callers,contender,label,admissions_per_s,p50_ms,p99_ms,client_cpu_us,server_cpu_us\n"
	// The header pgload wrote before the store gained its optimistic mode.
	const pgRetriesHeader = "callers,contender,label,admissions_per_s,p50_ms,p99_ms,client_cpu_us,server_cpu_us,retries\n"
	for name, tc := range map[string]struct {
		peers bool
		file  string
		want  string
	}{
		"empty":            {peers: true, file: "", want: "empty file"},
		"other header":     {peers: true, file: pgHeader, want: "header"},
		"short row":        {peers: true, file: peerHeader + "hot,x,X,1,2\n", want: "wrong number of fields"},
		"bad number":       {peers: true, file: peerHeader + "hot,x,X,1,fast,0,0,,3\n", want: `line 2: ns_per_op is "fast"`},
		"infinite":         {peers: true, file: peerHeader + "hot,x,X,1,+Inf,0,0,,3\n", want: "ns_per_op"},
		"unknown scenario": {peers: true, file: peerHeader + "cold,x,X,1,2,0,0,,3\n", want: `unknown scenario "cold"`},
		"no contender":     {peers: true, file: peerHeader + "hot,,X,1,2,0,0,,3\n", want: "no contender"},
		"pg bad callers":   {file: pgHeader + "many,store,S,1,1,1,1,1\n", want: "callers"},
		"pg zero rate":     {file: pgHeader + "8,store,S,0,1,1,1,1\n", want: "positive caller count and rate"},
		"pg missing rate":  {file: pgHeader + "8,store,S,,1,1,1,1\n", want: "positive caller count and rate"},
		"pg bad p99":       {file: pgHeader + "8,store,S,1,1,slow,1,1\n", want: `line 2: p99_ms is "slow"`},
		"pg no contender":  {file: pgHeader + "8,,S,1,1,1,1,1\n", want: "positive caller count and rate and a contender"},
		"pg extra column":  {file: pgHeader + "8,store,S,1,1,1,1,1,0\n", want: "wrong number of fields"},
		"pg retries":       {file: pgRetriesHeader + "8,store,S,1,1,1,1,1,0\n", want: "header"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tc.peers {
				_, err = benchcsv.ReadPeers(strings.NewReader(tc.file))
			} else {
				_, err = benchcsv.ReadPG(strings.NewReader(tc.file))
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNumbersAreRoundedToThousandths(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, benchcsv.WritePeers(&buf, []benchcsv.PeerRow{{Scenario: benchcsv.Hot, Contender: "x", Label: "X",
		Procs: 1, NsPerOp: 235.04999999999998, AllocsPerOp: 0.5, BytesPerOp: 1e6, BytesPerKey: math.NaN(), Runs: 2}}))
	require.Contains(t, buf.String(), "hot,x,X,1,235.05,0.5,1000000,,2\n")
}
