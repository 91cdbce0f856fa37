package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
)

// Meta says where, when and how the numbers were measured.
type Meta struct {
	Machine string // such as "AMD EPYC, 2 vCPU, 24 GiB, linux/amd64, go1.26.8"
	Date    string // such as "2026-12-01"
	Command string // the command that measured and drew them
}

// WriteMarkdown writes every table of both comparisons, headed by meta.
// Either list of rows may be empty.
func WriteMarkdown(w io.Writer, meta Meta, peers []benchcsv.PeerRow, pg []benchcsv.PGRow) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "Measured on %s, %s, with `%s`.\n", meta.Machine, meta.Date, meta.Command)
	if len(peers) > 0 {
		fmt.Fprintf(ew, "\n### Memory store against Go peers\n\n")
		WritePeerTables(ew, peers)
	}
	if len(pg) > 0 {
		fmt.Fprintf(ew, "\n### PostgreSQL store against its floor and Redis\n\n")
		WritePGTables(ew, pg)
	}
	return ew.err
}

// contenders returns the contender ids of rows in the order they first
// appear, with their labels.
func peerContenders(rows []benchcsv.PeerRow) (ids []string, labels map[string]string) {
	labels = map[string]string{}
	for _, r := range rows {
		if _, ok := labels[r.Contender]; !ok {
			ids = append(ids, r.Contender)
			labels[r.Contender] = r.Label
		}
	}
	return ids, labels
}

// scenariosOf returns the scenarios rows cover, in benchcsv order, and the
// GOMAXPROCS of the parallel one.
func scenariosOf(rows []benchcsv.PeerRow) (scenarios []string, procs int) {
	for _, s := range benchcsv.Scenarios {
		for _, r := range rows {
			if r.Scenario == s {
				scenarios = append(scenarios, s)
				if s == benchcsv.Parallel {
					procs = r.Procs
				}
				break
			}
		}
	}
	return scenarios, procs
}

// WritePeerTables writes the medians of every contender in every scenario,
// then Runlimit's ratios to each peer.
func WritePeerTables(w io.Writer, rows []benchcsv.PeerRow) {
	ids, labels := peerContenders(rows)
	scenarios, procs := scenariosOf(rows)
	byKey := map[[2]string]benchcsv.PeerRow{}
	runs := 0
	for _, r := range rows {
		byKey[[2]string{r.Scenario, r.Contender}] = r
		runs = max(runs, r.Runs)
	}
	titles := make([]string, len(scenarios))
	for i, s := range scenarios {
		titles[i] = scenarioTitle(s, procs)
	}
	fmt.Fprintf(w, "Medians of up to %d runs; every timed check was allowed and counted on its own key.\n\n", runs)
	fmt.Fprintf(w, "| contender | %s |\n", strings.Join(titles, " | "))
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---:|", len(scenarios)))
	for _, id := range ids {
		cells := make([]string, len(scenarios))
		for i, s := range scenarios {
			cells[i] = "–"
			if r, ok := byKey[[2]string{s, id}]; ok {
				cells[i] = peerValue(r)
			}
		}
		fmt.Fprintf(w, "| %s | %s |\n", labels[id], strings.Join(cells, " | "))
	}

	ratios := PeerRatios(rows)
	if len(ratios) == 0 {
		return
	}
	fmt.Fprintf(w, "\nRunlimit over each peer: time per check, or bytes per key (below 1.00, Runlimit is ahead).\n\n")
	fmt.Fprintf(w, "| Runlimit / peer | %s |\n", strings.Join(titles, " | "))
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---:|", len(scenarios)))
	for _, pr := range ratios {
		cells := make([]string, len(scenarios))
		for i, s := range scenarios {
			cells[i] = ratioCell(pr.ByScenario[s])
		}
		fmt.Fprintf(w, "| %s / %s | %s |\n", labels[pr.Runlimit], labels[pr.Peer], strings.Join(cells, " | "))
	}
}

// WritePGTables writes every measurement, then the ratios.
func WritePGTables(w io.Writer, rows []benchcsv.PGRow) {
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(a, b benchcsv.PGRow) int { return a.Callers - b.Callers })
	fmt.Fprintln(w, "| callers | contender | admissions/s | p50 | p99 | client CPU/op | server CPU/op |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|")
	for _, r := range sorted {
		server := "n/a"
		if !math.IsNaN(r.ServerCPUus) {
			server = fmt.Sprintf("%.0f µs", r.ServerCPUus)
		}
		fmt.Fprintf(w, "| %d | %s | %s | %.2f ms | %.2f ms | %.0f µs | %s |\n",
			r.Callers, r.Label, thousands(r.Rate), r.P50ms, r.P99ms, r.ClientCPUus, server)
	}
	fmt.Fprintln(w)
	WritePGRatios(w, rows)
}

// WritePGRatios writes the ratios of admission rates at each caller count,
// whether the optimistic mode runs [StoreModeGain] times the locked one at
// 32 callers, and whether each mode reaches [FloorBar] of the floor at 8
// and at 32 callers. A verdict whose contenders were not measured is left
// out.
func WritePGRatios(w io.Writer, rows []benchcsv.PGRow) {
	ratios := PGRatios(rows)
	fmt.Fprintln(w, "Ratios of admission rates (above 1.00, the first is faster). The store is postgres.Store in its "+
		"default, locked protocol; the optimistic store is the same store in its optimistic mode.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| callers | store / floor | optimistic store / floor | store / per-statement | optimistic store / per-statement "+
		"| store / Redis | store / naive | optimistic / store |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range ratios {
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", r.Callers,
			ratioCell(r.StoreFloor), ratioCell(r.OptimisticFloor), ratioCell(r.StoreStepwise), ratioCell(r.OptimisticStepwise),
			ratioCell(r.StoreRedis), ratioCell(r.StoreNaive), ratioCell(r.OptimisticStore))
	}
	at8, at32 := pgRatioAt(ratios, 8), pgRatioAt(ratios, 32)
	if !math.IsNaN(at32.OptimisticStore) {
		verdict := "short of"
		if at32.OptimisticStore >= StoreModeGain {
			verdict = "at or above"
		}
		fmt.Fprintf(w, "\nAt 32 callers the optimistic store runs at %sx the locked store's rate: %s the %.2fx a store mode needs.\n",
			barValue(at32.OptimisticStore, StoreModeGain), verdict, StoreModeGain)
	}
	var modes []string
	for _, m := range []struct {
		name      string
		at8, at32 float64
	}{
		{"locked store", at8.StoreFloor, at32.StoreFloor},
		{"optimistic store", at8.OptimisticFloor, at32.OptimisticFloor},
	} {
		if v := floorVerdict(m.name, m.at8, m.at32); v != "" {
			modes = append(modes, v)
		}
	}
	if len(modes) > 0 {
		fmt.Fprintf(w, "\nIssue 14's bar is %.2fx the protocol floor at 8 and at 32 callers: %s.\n", FloorBar, strings.Join(modes, "; "))
	}
}

// floorVerdict says whether the store mode called name reaches FloorBar,
// given its ratios to the floor at 8 and at 32 callers (NaN where not
// measured), or returns "" when neither was measured.
func floorVerdict(name string, at8, at32 float64) string {
	var reached, short, values []string
	for _, c := range []struct {
		callers int
		v       float64
	}{{8, at8}, {32, at32}} {
		if math.IsNaN(c.v) {
			values = append(values, fmt.Sprintf("%d not measured", c.callers))
			continue
		}
		values = append(values, fmt.Sprintf("%s at %d", barValue(c.v, FloorBar), c.callers))
		if c.v >= FloorBar {
			reached = append(reached, itoa(c.callers))
		} else {
			short = append(short, itoa(c.callers))
		}
	}
	var verdict string
	switch {
	case len(reached) == 0 && len(short) == 0:
		return ""
	case len(short) == 0:
		verdict = "reaches it at " + strings.Join(reached, " and ") + " callers"
	case len(reached) == 0:
		verdict = "falls short at " + strings.Join(short, " and ") + " callers"
	default:
		verdict = fmt.Sprintf("reaches it at %s callers but not at %s", reached[0], short[0])
	}
	return fmt.Sprintf("the %s %s (%s)", name, verdict, strings.Join(values, ", "))
}

// errWriter keeps the first write error, so that a run of Fprintf calls
// is checked once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
