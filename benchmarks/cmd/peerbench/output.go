package main

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
	"github.com/runlimit/runlimit/benchmarks/peers"
)

// functionOf names each scenario's benchmark function in package peers.
var functionOf = map[string]string{
	benchcsv.Hot:      "BenchmarkHotKey",
	benchcsv.Keys10k:  "BenchmarkKeys10k",
	benchcsv.Parallel: "BenchmarkParallel",
	benchcsv.Retained: "BenchmarkRetained",
}

// result is one line of go test's benchmark output.
type result struct {
	scenario, contender string
	procs               int
	metrics             map[string]float64 // by unit, such as "ns/op"
}

// procsSuffix is the "-N" go test appends to a benchmark's name when it
// ran with GOMAXPROCS N other than 1.
var procsSuffix = regexp.MustCompile(`-([0-9]+)$`)

// parseOutput reads the benchmark lines of go test's output, such as
//
//	BenchmarkParallel/lib=golimiter-2   1000000   63.1 ns/op   0 B/op   0 allocs/op
//
// and ignores every other line. A line naming a benchmark outside the
// peers' scenarios, or malformed, is an error: it means the benchmarks and
// this reader disagree.
func parseOutput(out string) ([]result, error) {
	var rs []result
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "Benchmark") || len(f) < 4 || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // a benchmark's own log line, not a result
		}
		r, err := parseName(f[0])
		if err != nil {
			return nil, err
		}
		r.metrics = map[string]float64{}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %q is not a number", line, f[i])
			}
			r.metrics[f[i+1]] = v
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func parseName(name string) (result, error) {
	r := result{procs: 1}
	if m := procsSuffix.FindStringSubmatch(name); m != nil {
		r.procs, _ = strconv.Atoi(m[1])
		name = strings.TrimSuffix(name, m[0])
	}
	fn, sub, ok := strings.Cut(name, "/lib=")
	if !ok || sub == "" || strings.Contains(sub, "/") {
		return r, fmt.Errorf("benchmark %q is not Benchmark<Scenario>/lib=<contender>", name)
	}
	for s, f := range functionOf {
		if f == fn {
			r.scenario = s
		}
	}
	if r.scenario == "" {
		return r, fmt.Errorf("benchmark %q belongs to no scenario", name)
	}
	r.contender = sub
	return r, nil
}

// medians groups results by scenario, contender and GOMAXPROCS and takes
// the median of each metric, in scenario order and then the order of
// peers.Contenders.
func medians(rs []result) ([]benchcsv.PeerRow, error) {
	type group struct {
		scenario, contender string
		procs               int
	}
	byGroup := map[group][]result{}
	var groups []group
	for _, r := range rs {
		g := group{r.scenario, r.contender, r.procs}
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], r)
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("no benchmark results")
	}
	rank := func(g group) (int, int, int) {
		c := slices.IndexFunc(peers.Contenders(), func(c peers.Contender) bool { return c.ID == g.contender })
		if c < 0 {
			c = math.MaxInt
		}
		return slices.Index(benchcsv.Scenarios, g.scenario), c, g.procs
	}
	slices.SortStableFunc(groups, func(a, b group) int {
		as, ac, ap := rank(a)
		bs, bc, bp := rank(b)
		switch {
		case as != bs:
			return as - bs
		case ac != bc:
			if ac < bc {
				return -1
			}
			return 1
		}
		return ap - bp
	})
	rows := make([]benchcsv.PeerRow, 0, len(groups))
	for _, g := range groups {
		rs := byGroup[g]
		row := benchcsv.PeerRow{
			Scenario: g.scenario, Contender: g.contender, Label: peers.Label(g.contender), Procs: g.procs, Runs: len(rs),
			NsPerOp: math.NaN(), AllocsPerOp: math.NaN(), BytesPerOp: math.NaN(), BytesPerKey: math.NaN(),
		}
		if g.scenario == benchcsv.Retained {
			// Its ns/op and allocations are those of filling and checking
			// a million keys, not of one check.
			row.BytesPerKey = median(rs, "B/key")
		} else {
			row.NsPerOp = median(rs, "ns/op")
			row.AllocsPerOp = median(rs, "allocs/op")
			row.BytesPerOp = median(rs, "B/op")
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// median returns the median of unit over rs (the mean of the middle two
// of an even count), or NaN when no result reports unit.
func median(rs []result, unit string) float64 {
	var vs []float64
	for _, r := range rs {
		if v, ok := r.metrics[unit]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return math.NaN()
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}
