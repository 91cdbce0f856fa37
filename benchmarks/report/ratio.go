package report

import (
	"math"
	"slices"
	"strings"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
)

// PeerRatio compares one Runlimit row with one peer, per scenario.
type PeerRatio struct {
	Runlimit, Peer string // contender ids
	// ByScenario is Runlimit's value over the peer's (ns per check, or
	// bytes per key for benchcsv.Retained); NaN when either is missing.
	ByScenario map[string]float64
}

// isRunlimit reports whether contender id is one of Runlimit's rows.
func isRunlimit(id string) bool { return strings.HasPrefix(id, "runlimit") }

// metric is the value a peer row is compared and drawn by.
func metric(r benchcsv.PeerRow) float64 {
	if r.Scenario == benchcsv.Retained {
		return r.BytesPerKey
	}
	return r.NsPerOp
}

// PeerRatios returns a ratio for every Runlimit row and every peer, in the
// order the contenders first appear in rows.
func PeerRatios(rows []benchcsv.PeerRow) []PeerRatio {
	value := map[[2]string]float64{} // scenario, contender
	var runlimit, peers []string
	for _, r := range rows {
		value[[2]string{r.Scenario, r.Contender}] = metric(r)
		list := &peers
		if isRunlimit(r.Contender) {
			list = &runlimit
		}
		if !slices.Contains(*list, r.Contender) {
			*list = append(*list, r.Contender)
		}
	}
	var out []PeerRatio
	for _, rl := range runlimit {
		for _, p := range peers {
			pr := PeerRatio{Runlimit: rl, Peer: p, ByScenario: map[string]float64{}}
			for _, s := range benchcsv.Scenarios {
				pr.ByScenario[s] = ratio(value, [2]string{s, rl}, [2]string{s, p})
			}
			out = append(out, pr)
		}
	}
	return out
}

// The bars of issue 14 that the ratios are judged by.
const (
	// StoreModeGain is how much faster than the locked protocol, at 32
	// callers, the optimistic protocol had to be to become a store mode.
	StoreModeGain = 1.15
	// FloorBar is the share of the protocol floor's rate a store mode
	// should reach at 8 and at 32 callers.
	FloorBar = 0.85
)

// PGRatio holds the ratios of admission rates at one caller count; each is
// NaN when a contender is missing. The store is postgres.Store in its
// default, locked protocol, the optimistic store the same store in its
// optimistic mode.
type PGRatio struct {
	Callers            int
	StoreFloor         float64 // store / protocol floor
	OptimisticFloor    float64 // optimistic store / protocol floor
	StoreStepwise      float64 // store / one round trip per statement
	OptimisticStepwise float64 // optimistic store / one round trip per statement
	StoreRedis         float64 // store / redis_rate
	StoreNaive         float64 // store / naive upsert
	OptimisticStore    float64 // optimistic store / store
}

// PGRatios returns the ratios at every caller count in rows, ascending.
func PGRatios(rows []benchcsv.PGRow) []PGRatio {
	rate := map[[2]string]float64{} // callers, contender
	var callers []int
	for _, r := range rows {
		rate[[2]string{itoa(r.Callers), r.Contender}] = r.Rate
		if !slices.Contains(callers, r.Callers) {
			callers = append(callers, r.Callers)
		}
	}
	slices.Sort(callers)
	out := make([]PGRatio, len(callers))
	for i, n := range callers {
		k := func(id string) [2]string { return [2]string{itoa(n), id} }
		out[i] = PGRatio{
			Callers:            n,
			StoreFloor:         ratio(rate, k(benchcsv.Store), k(benchcsv.Floor)),
			OptimisticFloor:    ratio(rate, k(benchcsv.Optimistic), k(benchcsv.Floor)),
			StoreStepwise:      ratio(rate, k(benchcsv.Store), k(benchcsv.Stepwise)),
			OptimisticStepwise: ratio(rate, k(benchcsv.Optimistic), k(benchcsv.Stepwise)),
			StoreRedis:         ratio(rate, k(benchcsv.Store), k(benchcsv.Redis)),
			StoreNaive:         ratio(rate, k(benchcsv.Store), k(benchcsv.Naive)),
			OptimisticStore:    ratio(rate, k(benchcsv.Optimistic), k(benchcsv.Store)),
		}
	}
	return out
}

// pgRatioAt returns the ratios at n callers from ratios, every one NaN when
// n was not measured.
func pgRatioAt(ratios []PGRatio, n int) PGRatio {
	for _, r := range ratios {
		if r.Callers == n {
			return r
		}
	}
	nan := math.NaN()
	return PGRatio{Callers: n, StoreFloor: nan, OptimisticFloor: nan, StoreStepwise: nan, OptimisticStepwise: nan,
		StoreRedis: nan, StoreNaive: nan, OptimisticStore: nan}
}

func ratio(m map[[2]string]float64, num, den [2]string) float64 {
	a, ok1 := m[num]
	b, ok2 := m[den]
	if !ok1 || !ok2 || math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}
