package conformance

import (
	"context"
	"sync/atomic"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// countingStore counts the batches that reach a store, so a case can prove
// that an invalid batch never touched it.
type countingStore struct {
	inner  ports.Store
	admits atomic.Int64
}

func (s *countingStore) Admit(ctx context.Context, b *domain.Batch) error {
	s.admits.Add(1)
	return s.inner.Admit(ctx, b)
}
