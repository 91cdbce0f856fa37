package peers

import (
	"context"
	"math"
	"time"

	limiter "github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/memorystore"
)

// goLimiter is go-limiter's memorystore with more tokens per hour than any
// benchmark takes.
type goLimiter struct {
	store    limiter.Store
	ctx      context.Context
	subjects []string
}

func newGoLimiter(subjects []string) (Limiter, error) {
	store, err := memorystore.New(&memorystore.Config{Tokens: math.MaxUint64 / 2, Interval: time.Hour})
	if err != nil {
		return nil, err
	}
	return &goLimiter{store: store, ctx: context.Background(), subjects: subjects}, nil
}

func (g *goLimiter) Allow(i int) bool { return g.AllowSubject(g.subjects[i]) }

func (g *goLimiter) AllowSubject(s string) bool {
	_, _, _, ok, err := g.store.Take(g.ctx, s)
	return ok && err == nil
}

// Counted reads tokens less remaining: no bucket refills within the hour a
// benchmark takes.
func (g *goLimiter) Counted(s string) (int64, error) {
	tokens, remaining, err := g.store.Get(g.ctx, s)
	return int64(tokens - remaining), err
}

func (g *goLimiter) Tracked() (int, bool) { return 0, false }

func (g *goLimiter) Close() { _ = g.store.Close(context.Background()) }
