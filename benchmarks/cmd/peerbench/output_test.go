package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
)

const sampleOutput = `goos: linux
goarch: amd64
pkg: github.com/runlimit/runlimit/benchmarks/peers
cpu: AMD EPYC
BenchmarkHotKey/lib=golimiter         	 1561171	        75.76 ns/op	       0 B/op	       0 allocs/op
BenchmarkHotKey/lib=runlimit-hmac     	  406620	       337.5 ns/op	       0 B/op	       0 allocs/op
BenchmarkKeys10k/lib=ulule            	  276738	       522.7 ns/op	      31 B/op	       2 allocs/op
BenchmarkParallel/lib=runlimit-2      	  922204	       344.2 ns/op	       0 B/op	       0 allocs/op
BenchmarkRetained/lib=throttled       	       1	3723754026 ns/op	        87.81 B/key	199316856 B/op	 5008009 allocs/op
--- BENCH: BenchmarkSomething
    bench_test.go:12: a log line
PASS
ok  	github.com/runlimit/runlimit/benchmarks/peers	2.295s
`

func TestParseOutputReadsEveryResult(t *testing.T) {
	t.Parallel()
	rs, err := parseOutput(sampleOutput)
	require.NoError(t, err)
	require.Len(t, rs, 5)
	require.Equal(t, result{scenario: benchcsv.Hot, contender: "golimiter", procs: 1,
		metrics: map[string]float64{"ns/op": 75.76, "B/op": 0, "allocs/op": 0}}, rs[0])
	require.Equal(t, "runlimit-hmac", rs[1].contender)
	require.Equal(t, benchcsv.Keys10k, rs[2].scenario)
	require.Equal(t, 2.0, rs[2].metrics["allocs/op"])
	require.Equal(t, result{scenario: benchcsv.Parallel, contender: "runlimit", procs: 2,
		metrics: map[string]float64{"ns/op": 344.2, "B/op": 0, "allocs/op": 0}}, rs[3])
	require.Equal(t, 87.81, rs[4].metrics["B/key"])
}

func TestParseOutputRejectsUnknownBenchmarks(t *testing.T) {
	t.Parallel()
	for name, line := range map[string]string{
		"other function": "BenchmarkOther/lib=x 10 1 ns/op\n",
		"no contender":   "BenchmarkHotKey 10 1 ns/op\n",
		"nested":         "BenchmarkHotKey/lib=x/y 10 1 ns/op\n",
		"bad value":      "BenchmarkHotKey/lib=x 10 fast ns/op\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := parseOutput(line)
			require.Error(t, err)
		})
	}
}

func TestMediansGroupAndOrder(t *testing.T) {
	t.Parallel()
	r := func(scenario, contender string, procs int, metrics map[string]float64) result {
		return result{scenario: scenario, contender: contender, procs: procs, metrics: metrics}
	}
	rows, err := medians([]result{
		r(benchcsv.Retained, "golimiter", 1, map[string]float64{"ns/op": 9e9, "B/key": 200}),
		r(benchcsv.Hot, "golimiter", 1, map[string]float64{"ns/op": 90, "allocs/op": 0, "B/op": 0}),
		r(benchcsv.Hot, "runlimit", 1, map[string]float64{"ns/op": 130, "allocs/op": 0, "B/op": 0}),
		r(benchcsv.Hot, "golimiter", 1, map[string]float64{"ns/op": 70, "allocs/op": 0, "B/op": 0}),
		r(benchcsv.Hot, "runlimit", 1, map[string]float64{"ns/op": 100, "allocs/op": 0, "B/op": 0}),
		r(benchcsv.Hot, "runlimit", 1, map[string]float64{"ns/op": 110, "allocs/op": 1, "B/op": 16}),
		r(benchcsv.Hot, "golimiter", 1, map[string]float64{"ns/op": 80, "allocs/op": 0, "B/op": 0}),
		r(benchcsv.Hot, "golimiter", 1, map[string]float64{"ns/op": 1000, "allocs/op": 0, "B/op": 0}),
		r(benchcsv.Retained, "golimiter", 1, map[string]float64{"ns/op": 9e9, "B/key": 202}),
	})
	require.NoError(t, err)
	require.Len(t, rows, 3)

	// Runlimit's rows come before the peers', scenarios in their order.
	require.Equal(t, "runlimit", rows[0].Contender)
	require.Equal(t, 110.0, rows[0].NsPerOp)
	require.Equal(t, 0.0, rows[0].AllocsPerOp)
	require.Equal(t, 3, rows[0].Runs)
	require.Equal(t, "Runlimit, key derived once", rows[0].Label)

	require.Equal(t, "golimiter", rows[1].Contender)
	require.Equal(t, 85.0, rows[1].NsPerOp, "the mean of the middle two of four")
	require.True(t, math.IsNaN(rows[1].BytesPerKey))

	require.Equal(t, benchcsv.Retained, rows[2].Scenario)
	require.Equal(t, 201.0, rows[2].BytesPerKey)
	require.True(t, math.IsNaN(rows[2].NsPerOp), "a retained run's time is not a check's")

	_, err = medians(nil)
	require.Error(t, err)
}

func TestInvocationsRunScenariosTogether(t *testing.T) {
	t.Parallel()
	all := map[string]bool{benchcsv.Hot: true, benchcsv.Keys10k: true, benchcsv.Parallel: true, benchcsv.Retained: true}
	cfg := config{scenarios: all, benchtime: "100ms", parallelCPU: 2, retainedCount: 1}
	first := invocations(cfg, 0)
	require.Len(t, first, 3)
	require.Equal(t, []string{"-test.bench", "^(BenchmarkHotKey|BenchmarkKeys10k)$", "-test.cpu", "1", "-test.benchtime", "100ms"}, first[0].args)
	require.Equal(t, []string{"-test.bench", "^BenchmarkParallel$", "-test.cpu", "2", "-test.benchtime", "100ms"}, first[1].args)
	require.Equal(t, []string{"-test.bench", "^BenchmarkRetained$", "-test.cpu", "1", "-test.benchtime", "1x"}, first[2].args)
	require.Len(t, invocations(cfg, 1), 2, "retained memory only in the first -retained-count rounds")

	cfg.scenarios = map[string]bool{benchcsv.Keys10k: true}
	only := invocations(cfg, 0)
	require.Len(t, only, 1)
	require.Equal(t, "^(BenchmarkKeys10k)$", only[0].args[1])
}
