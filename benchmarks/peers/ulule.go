package peers

import (
	"context"
	"math"
	"time"

	ulule "github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// ululeLimiter is ulule/limiter's memory store behind its Limiter, with a
// limit per hour no benchmark reaches. Its store's default cleaner runs
// every 30 seconds.
type ululeLimiter struct {
	limiter  *ulule.Limiter
	ctx      context.Context
	subjects []string
}

func newUlule(subjects []string) (Limiter, error) {
	store := memory.NewStoreWithOptions(ulule.StoreOptions{
		Prefix:          ulule.DefaultPrefix,
		CleanUpInterval: ulule.DefaultCleanUpInterval,
	})
	rate := ulule.Rate{Period: time.Hour, Limit: math.MaxInt64 / 2}
	return &ululeLimiter{limiter: ulule.New(store, rate), ctx: context.Background(), subjects: subjects}, nil
}

func (u *ululeLimiter) Allow(i int) bool { return u.AllowSubject(u.subjects[i]) }

func (u *ululeLimiter) AllowSubject(s string) bool {
	c, err := u.limiter.Get(u.ctx, s)
	return err == nil && !c.Reached
}

// Counted peeks: the limit less what remains in the current window.
func (u *ululeLimiter) Counted(s string) (int64, error) {
	c, err := u.limiter.Peek(u.ctx, s)
	return c.Limit - c.Remaining, err
}

func (u *ululeLimiter) Tracked() (int, bool) { return 0, false }

// Close leaves the store's cleaner goroutine to its finalizer: the store
// offers no way to stop it.
func (u *ululeLimiter) Close() {}
