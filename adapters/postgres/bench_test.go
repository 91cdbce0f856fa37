package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
)

// BenchmarkAdmit measures one caller's single-check admissions on 64 keys
// of its own, the steady state of a counter that already has a row.
func BenchmarkAdmit(b *testing.B) {
	f := setup(b, postgres.Config{})
	p := policy(b, "bench", domain.MaxLimit, time.Hour)
	var batches []*domain.Batch
	for i := range 64 {
		batch, err := domain.NewBatch([]domain.Check{domain.NewCheck(p, f.hasher.KeyString(p, fmt.Sprint(i)))}, 1)
		if err != nil {
			b.Fatal(err)
		}
		batches = append(batches, batch)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		batch := batches[i%len(batches)]
		if err := batch.Reset([]domain.Check{batch.Check(0)}, 1); err != nil {
			b.Fatal(err)
		}
		if err := f.store.Admit(ctx, batch); err != nil {
			b.Fatal(err)
		}
		if d, _ := batch.Decision(); d.Outcome() != domain.Allowed {
			b.Fatalf("admission %d: %v", i, d.Outcome())
		}
	}
}
