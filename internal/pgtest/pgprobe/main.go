// Command pgprobe tells, in one line, which PostgreSQL server the tests
// will use, or what to do when there is none, and exits 1 then. The
// Makefile's test target runs it before go test, so that a run without a
// server stops at once with one line of advice instead of a failure in
// every database test.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/runlimit/runlimit/internal/pgtest"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	line, err := pgtest.Probe(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		cancel()
		os.Exit(1)
	}
	fmt.Println(line)
}
