// Command peerbench runs the peer comparison of package peers and writes
// the medians as CSV (see package benchcsv) beside go test's raw output,
// which benchstat reads too.
//
// It builds the test binary once and runs it -count rounds. Each round runs
// every scenario once with every contender side by side, so that load from
// elsewhere on the machine falls on all of them alike:
//
//   - hot key and 10,000 keys, in one run with -cpu 1;
//   - parallel over distinct keys, with -cpu set by -parallel-cpu;
//   - retained memory per key at 1,000,000 keys, with -benchtime 1x, in
//     the first -retained-count rounds only (its numbers barely move).
//
// Run it from the benchmarks module:
//
//	go run ./cmd/peerbench -count 6 -raw results/peers.txt -csv results/peers.csv
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
)

const peersPackage = "github.com/runlimit/runlimit/benchmarks/peers"

type config struct {
	count, retainedCount int
	benchtime            string
	parallelCPU          int
	scenarios            map[string]bool
	rawPath, csvPath     string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.count, "count", 6, "rounds; each runs every scenario once")
	flag.IntVar(&cfg.retainedCount, "retained-count", 3, "rounds, of the first -count, that also measure retained memory")
	flag.StringVar(&cfg.benchtime, "benchtime", "1s", "go test -benchtime of the timed scenarios")
	flag.IntVar(&cfg.parallelCPU, "parallel-cpu", 2, "GOMAXPROCS of the parallel scenario")
	scenarios := flag.String("scenarios", strings.Join(benchcsv.Scenarios, ","), "comma-separated scenarios to run")
	flag.StringVar(&cfg.rawPath, "raw", "peers.txt", "write go test's output to `file`")
	flag.StringVar(&cfg.csvPath, "csv", "peers.csv", "write the medians to `file`")
	flag.Parse()
	cfg.scenarios = map[string]bool{}
	for _, s := range strings.Split(*scenarios, ",") {
		s = strings.TrimSpace(s)
		if !isScenario(s) {
			fail(2, fmt.Errorf("-scenarios: unknown scenario %q (want some of %v)", s, benchcsv.Scenarios))
		}
		cfg.scenarios[s] = true
	}
	if cfg.count < 1 || cfg.retainedCount < 0 || cfg.parallelCPU < 1 {
		fail(2, fmt.Errorf("-count and -parallel-cpu must be positive, -retained-count not negative"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fail(1, err)
	}
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "peerbench:", err)
	os.Exit(code)
}

func isScenario(s string) bool {
	for _, known := range benchcsv.Scenarios {
		if s == known {
			return true
		}
	}
	return false
}

// invocation is one run of the test binary, by its flags.
type invocation struct {
	args []string
}

func invocations(cfg config, round int) []invocation {
	var inv []invocation
	var serial []string
	for _, s := range []string{benchcsv.Hot, benchcsv.Keys10k} {
		if cfg.scenarios[s] {
			serial = append(serial, functionOf[s])
		}
	}
	if len(serial) > 0 {
		inv = append(inv, invocation{args: []string{
			"-test.bench", "^(" + strings.Join(serial, "|") + ")$", "-test.cpu", "1", "-test.benchtime", cfg.benchtime}})
	}
	if cfg.scenarios[benchcsv.Parallel] {
		inv = append(inv, invocation{args: []string{
			"-test.bench", "^BenchmarkParallel$", "-test.cpu", strconv.Itoa(cfg.parallelCPU), "-test.benchtime", cfg.benchtime}})
	}
	if cfg.scenarios[benchcsv.Retained] && round < cfg.retainedCount {
		inv = append(inv, invocation{args: []string{
			"-test.bench", "^BenchmarkRetained$", "-test.cpu", "1", "-test.benchtime", "1x"}})
	}
	return inv
}

func run(ctx context.Context, cfg config) error {
	dir, err := os.MkdirTemp("", "peerbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "peers.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, peersPackage)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build the benchmarks (run from the benchmarks module): %w", err)
	}
	raw, err := os.Create(cfg.rawPath)
	if err != nil {
		return err
	}
	defer raw.Close()

	var results []result
	for round := range cfg.count {
		for _, inv := range invocations(cfg, round) {
			fmt.Fprintf(os.Stderr, "peerbench: round %d of %d: %s\n", round+1, cfg.count, strings.Join(inv.args, " "))
			args := append([]string{"-test.run", "^$", "-test.benchmem", "-test.count", "1"}, inv.args...)
			cmd := exec.CommandContext(ctx, bin, args...)
			var out strings.Builder
			cmd.Stdout = io.MultiWriter(raw, &out, os.Stderr)
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("benchmarks failed (%s): %w", strings.Join(inv.args, " "), err)
			}
			rs, err := parseOutput(out.String())
			if err != nil {
				return err
			}
			results = append(results, rs...)
		}
	}
	rows, err := medians(results)
	if err != nil {
		return err
	}
	f, err := os.Create(cfg.csvPath)
	if err != nil {
		return err
	}
	if err := benchcsv.WritePeers(f, rows); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "peerbench: wrote %s (%d rows) and %s\n", cfg.csvPath, len(rows), cfg.rawPath)
	return nil
}
