package benchcsv

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// pgload contenders. Store and Optimistic are postgres.Store in its locked
// (default) and optimistic protocols.
const (
	Naive      = "naive"
	Stepwise   = "stepwise"
	Floor      = "floor"
	Store      = "store"
	Optimistic = "optimistic"
	Redis      = "redis"
)

// PGRow is one contender's measurement at one caller count. ServerCPUus is
// NaN when the server's CPU was not measured.
type PGRow struct {
	Callers     int
	Contender   string // id, such as "store" or "redis"
	Label       string
	Rate        float64 // admissions per second
	P50ms       float64
	P99ms       float64
	ClientCPUus float64 // CPU of the measuring process per admission
	ServerCPUus float64 // CPU of the server's processes per admission
}

var pgHeader = []string{"callers", "contender", "label", "admissions_per_s", "p50_ms", "p99_ms", "client_cpu_us", "server_cpu_us"}

// WritePG writes rows with a header.
func WritePG(w io.Writer, rows []PGRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(pgHeader); err != nil {
		return err
	}
	for _, r := range rows {
		rec := []string{strconv.Itoa(r.Callers), r.Contender, r.Label, number(r.Rate),
			number(r.P50ms), number(r.P99ms), number(r.ClientCPUus), number(r.ServerCPUus)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadPG reads what WritePG wrote. It rejects a file whose header differs,
// a malformed number and a row without a positive caller count or rate.
func ReadPG(r io.Reader) ([]PGRow, error) {
	recs, err := records(r, pgHeader)
	if err != nil {
		return nil, err
	}
	rows := make([]PGRow, 0, len(recs))
	for i, rec := range recs {
		line := i + 2
		p := parser{line: line}
		row := PGRow{
			Callers:     p.int("callers", rec[0]),
			Contender:   rec[1],
			Label:       rec[2],
			Rate:        p.float("admissions_per_s", rec[3]),
			P50ms:       p.float("p50_ms", rec[4]),
			P99ms:       p.float("p99_ms", rec[5]),
			ClientCPUus: p.float("client_cpu_us", rec[6]),
			ServerCPUus: p.float("server_cpu_us", rec[7]),
		}
		if p.err != nil {
			return nil, p.err
		}
		if row.Callers < 1 || !(row.Rate > 0) || row.Contender == "" {
			return nil, fmt.Errorf("benchcsv: line %d: want a positive caller count and rate and a contender", line)
		}
		rows = append(rows, row)
	}
	return rows, nil
}
