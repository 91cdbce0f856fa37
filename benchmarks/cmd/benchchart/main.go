// Command benchchart turns the CSV files of the two comparisons (peers.csv
// from cmd/peerbench, pgload.csv from cmd/pgload -csv) into an SVG bar chart
// and markdown tables with ratios, both naming the machine, the date and
// the command that produced the numbers.
//
//	go run ./cmd/benchchart -peers results/peers.csv -pgload results/pgload.csv \
//	    -svg results/chart.svg -md results/tables.md -command "benchmarks/run.sh"
//
// Either input may be left out with an empty flag.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
	"github.com/runlimit/runlimit/benchmarks/report"
)

func main() {
	peersPath := flag.String("peers", "peers.csv", "peer comparison CSV (empty: none)")
	pgPath := flag.String("pgload", "pgload.csv", "pgload CSV (empty: none)")
	svgPath := flag.String("svg", "chart.svg", "write the chart to `file`")
	mdPath := flag.String("md", "tables.md", "write the tables to `file`")
	var meta report.Meta
	flag.StringVar(&meta.Machine, "machine", machine(), "the machine, as the chart names it")
	flag.StringVar(&meta.Date, "date", time.Now().Format(time.DateOnly), "the date of the measurement")
	flag.StringVar(&meta.Command, "command", "benchmarks/run.sh", "the command that measured")
	flag.Parse()
	if err := run(meta, *peersPath, *pgPath, *svgPath, *mdPath); err != nil {
		fmt.Fprintln(os.Stderr, "benchchart:", err)
		os.Exit(1)
	}
}

func run(meta report.Meta, peersPath, pgPath, svgPath, mdPath string) error {
	if peersPath == "" && pgPath == "" {
		return fmt.Errorf("nothing to draw: -peers and -pgload are both empty")
	}
	var (
		peers []benchcsv.PeerRow
		pg    []benchcsv.PGRow
		err   error
	)
	if peersPath != "" {
		if peers, err = read(peersPath, benchcsv.ReadPeers); err != nil {
			return err
		}
	}
	if pgPath != "" {
		if pg, err = read(pgPath, benchcsv.ReadPG); err != nil {
			return err
		}
	}
	if err := write(svgPath, func(w io.Writer) error { return report.WriteSVG(w, meta, peers, pg) }); err != nil {
		return err
	}
	return write(mdPath, func(w io.Writer) error { return report.WriteMarkdown(w, meta, peers, pg) })
}

func read[T any](path string, parse func(io.Reader) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

func write(path string, render func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := render(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
