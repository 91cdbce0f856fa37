package main

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/benchmarks/report"
)

const peersCSV = `scenario,contender,label,procs,ns_per_op,allocs_per_op,bytes_per_op,bytes_per_key,runs
hot,runlimit,"Runlimit, key derived once",1,100,0,0,,4
hot,golimiter,go-limiter,1,80,0,0,,4
retained,golimiter,go-limiter,1,,,,200,2
`

const pgCSV = `callers,contender,label,admissions_per_s,p50_ms,p99_ms,client_cpu_us,server_cpu_us
32,store,"postgres.Store, locked protocol (default)",8000,3.7,12.2,55,186
32,optimistic,"postgres.Store, optimistic protocol",9200,3.1,10.4,50,150
32,floor,protocol floor,10000,2.7,8.2,47,128
`

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// countBars reads an SVG with encoding/xml and counts its bars.
func countBars(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	d := xml.NewDecoder(f)
	bars := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return bars
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			for _, a := range se.Attr {
				if a.Name.Local == "class" && a.Value == "bar" {
					bars++
				}
			}
		}
	}
}

func TestRunDrawsBothComparisons(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	svg, md := filepath.Join(dir, "chart.svg"), filepath.Join(dir, "tables.md")
	meta := report.Meta{Machine: "test machine", Date: "2026-12-01", Command: "run.sh"}
	require.NoError(t, run(meta, writeFile(t, dir, "peers.csv", peersCSV), writeFile(t, dir, "pgload.csv", pgCSV), svg, md))

	require.Equal(t, 6, countBars(t, svg), "one bar per CSV row")
	chart, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.Contains(t, string(chart), ">postgres.Store, locked protocol (default)</text>")
	require.Contains(t, string(chart), ">postgres.Store, optimistic protocol</text>", "the optimistic contender is the store's mode")
	b, err := os.ReadFile(md)
	require.NoError(t, err)
	require.Contains(t, string(b), "| Runlimit, key derived once / go-limiter | 1.25 | – |")
	require.Contains(t, string(b), "| 32 | 0.80 | 0.92 | – | – | – | – | 1.15 |")
	require.Contains(t, string(b), "the locked store falls short at 32 callers (8 not measured, 0.80 at 32); "+
		"the optimistic store reaches it at 32 callers (8 not measured, 0.92 at 32).")
}

func TestRunWithOneInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	svg, md := filepath.Join(dir, "chart.svg"), filepath.Join(dir, "tables.md")
	require.NoError(t, run(report.Meta{}, "", writeFile(t, dir, "pgload.csv", pgCSV), svg, md))
	require.Equal(t, 3, countBars(t, svg))
	require.Error(t, run(report.Meta{}, "", "", svg, md))
}

func TestRunRejectsAMalformedCSV(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := writeFile(t, dir, "peers.csv", strings.Replace(peersCSV, ",100,", ",fast,", 1))
	err := run(report.Meta{}, bad, "", filepath.Join(dir, "chart.svg"), filepath.Join(dir, "tables.md"))
	require.ErrorContains(t, err, "peers.csv")
	require.ErrorContains(t, err, `"fast"`)
}

func TestDescribeMachine(t *testing.T) {
	t.Parallel()
	cpuinfo := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	meminfo := "MemTotal:       25165824 kB\nMemFree:         1000 kB\n"
	require.Equal(t, "AMD EPYC 7B13, 2 vCPU, 24 GiB, linux/amd64, go1.26.8",
		describe(cpuinfo, meminfo, 2, "linux/amd64", "go1.26.8"))
	require.Equal(t, "4 vCPU, darwin/arm64, go1.26.8", describe("", "", 4, "darwin/arm64", "go1.26.8"))
}
