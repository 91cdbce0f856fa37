package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
)

func itoa(n int) string { return strconv.Itoa(n) }

// ratioCell formats a ratio with two decimals, or a dash when it is NaN.
func ratioCell(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

// barValue formats a ratio judged against bar: with two decimals, or three
// when two would round a ratio short of the bar up to the bar itself.
func barValue(v, bar float64) string {
	s := fmt.Sprintf("%.2f", v)
	if v < bar && s == fmt.Sprintf("%.2f", bar) {
		s = fmt.Sprintf("%.3f", v)
	}
	return s
}

// thousands formats v rounded to an integer with comma separators.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// peerValue formats a peer row's measured value: time and allocations per
// check, or bytes per key.
func peerValue(r benchcsv.PeerRow) string {
	if r.Scenario == benchcsv.Retained {
		if math.IsNaN(r.BytesPerKey) {
			return "–"
		}
		return fmt.Sprintf("%.0f B/key", r.BytesPerKey)
	}
	if math.IsNaN(r.NsPerOp) {
		return "–"
	}
	s := fmt.Sprintf("%.0f ns", r.NsPerOp)
	if !math.IsNaN(r.AllocsPerOp) {
		s += fmt.Sprintf(", %.0f allocs", r.AllocsPerOp)
	}
	return s
}

// scenarioTitle names a scenario; procs is the parallel scenario's
// GOMAXPROCS.
func scenarioTitle(s string, procs int) string {
	switch s {
	case benchcsv.Hot:
		return "one hot key"
	case benchcsv.Keys10k:
		return "10,000 keys round-robin"
	case benchcsv.Parallel:
		return fmt.Sprintf("parallel, keys of its own per goroutine (%d procs)", procs)
	case benchcsv.Retained:
		return "retained heap per key at 1,000,000 keys"
	}
	return s
}
