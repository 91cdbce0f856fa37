package benchcsv

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// Peer scenarios.
const (
	Hot      = "hot"
	Keys10k  = "keys10k"
	Parallel = "parallel"
	Retained = "retained"
)

// Scenarios lists the peer scenarios in the order charts and tables show
// them.
var Scenarios = []string{Hot, Keys10k, Parallel, Retained}

// PeerRow is one contender's medians in one scenario. Metrics it has no
// value for are NaN.
type PeerRow struct {
	Scenario    string
	Contender   string // id, such as "runlimit" or "golimiter"
	Label       string
	Procs       int // GOMAXPROCS of the run
	NsPerOp     float64
	AllocsPerOp float64
	BytesPerOp  float64
	BytesPerKey float64
	Runs        int // how many runs the medians are taken over
}

var peerHeader = []string{"scenario", "contender", "label", "procs", "ns_per_op", "allocs_per_op", "bytes_per_op", "bytes_per_key", "runs"}

// WritePeers writes rows with a header.
func WritePeers(w io.Writer, rows []PeerRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(peerHeader); err != nil {
		return err
	}
	for _, r := range rows {
		rec := []string{r.Scenario, r.Contender, r.Label, strconv.Itoa(r.Procs),
			number(r.NsPerOp), number(r.AllocsPerOp), number(r.BytesPerOp), number(r.BytesPerKey), strconv.Itoa(r.Runs)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadPeers reads what WritePeers wrote. It rejects a file whose header
// differs, a row with a malformed number and an unknown scenario.
func ReadPeers(r io.Reader) ([]PeerRow, error) {
	recs, err := records(r, peerHeader)
	if err != nil {
		return nil, err
	}
	rows := make([]PeerRow, 0, len(recs))
	for i, rec := range recs {
		line := i + 2
		p := parser{line: line}
		row := PeerRow{
			Scenario:    rec[0],
			Contender:   rec[1],
			Label:       rec[2],
			Procs:       p.int("procs", rec[3]),
			NsPerOp:     p.float("ns_per_op", rec[4]),
			AllocsPerOp: p.float("allocs_per_op", rec[5]),
			BytesPerOp:  p.float("bytes_per_op", rec[6]),
			BytesPerKey: p.float("bytes_per_key", rec[7]),
			Runs:        p.int("runs", rec[8]),
		}
		if p.err != nil {
			return nil, p.err
		}
		if !known(row.Scenario) {
			return nil, fmt.Errorf("benchcsv: line %d: unknown scenario %q", line, row.Scenario)
		}
		if row.Contender == "" {
			return nil, fmt.Errorf("benchcsv: line %d: no contender", line)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func known(scenario string) bool {
	for _, s := range Scenarios {
		if s == scenario {
			return true
		}
	}
	return false
}
