package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

// BenchmarkAdmit measures one caller's single-check admissions on 64 keys
// of its own, the steady state of a counter that already has a row, as a
// batch of one (Admit) and as a single check (AdmitCheck). When the server
// runs on this machine it also reports the CPU its backend spent per
// admission (server-µs/op).
//
// The other variants run under a context that can end, as a server's
// request context can: one that can be cancelled, and one with a deadline,
// whose admission runs in a goroutine of its own that the caller can leave.
func BenchmarkAdmit(b *testing.B) {
	for _, path := range []string{"batch", "check", "batch/cancellable", "check/cancellable", "batch/deadline", "check/deadline"} {
		b.Run(path, func(b *testing.B) {
			f := setup(b, postgres.Config{})
			store, pool := f.newStore(b, postgres.Config{}, func(c *pgxpool.Config) { c.MaxConns = 1 })
			p := policy(b, "bench", domain.MaxLimit, time.Hour)
			checks := make([]domain.Check, 64)
			for i := range checks {
				checks[i] = domain.NewCheck(p, f.hasher.KeyString(p, fmt.Sprint(i)))
			}
			var batch domain.Batch
			ctx := context.Background()
			switch {
			case strings.HasSuffix(path, "/cancellable"):
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
			case strings.HasSuffix(path, "/deadline"):
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Hour)
				defer cancel()
			}
			admit := func(c domain.Check) domain.Outcome {
				if strings.HasPrefix(path, "check") {
					d, err := store.AdmitCheck(ctx, c)
					if err != nil {
						b.Fatal(err)
					}
					return d.Outcome()
				}
				if err := batch.Reset([]domain.Check{c}, 1); err != nil {
					b.Fatal(err)
				}
				if err := store.Admit(ctx, &batch); err != nil {
					b.Fatal(err)
				}
				d, err := batch.Decision()
				if err != nil {
					b.Fatal(err)
				}
				return d.Outcome()
			}
			for _, c := range checks { // every key gets its row
				admit(c)
			}
			var pid int
			if err := pool.QueryRow(ctx, "SELECT pg_catalog.pg_backend_pid()").Scan(&pid); err != nil {
				b.Fatal(err)
			}
			cpu0, local := backendCPU(pid)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if o := admit(checks[i%len(checks)]); o != domain.Allowed {
					b.Fatalf("admission %d: %v", i, o)
				}
			}
			b.StopTimer()
			if cpu1, ok := backendCPU(pid); local && ok {
				b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N), "server-µs/op")
			}
		})
	}
}

// backendCPU is the CPU time of a local server process, if /proc shows it.
func backendCPU(pid int) (time.Duration, bool) {
	s, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	fields := bytes.Fields(s[bytes.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, false
	}
	utime, _ := strconv.ParseInt(string(fields[11]), 10, 64)
	stime, _ := strconv.ParseInt(string(fields[12]), 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}
