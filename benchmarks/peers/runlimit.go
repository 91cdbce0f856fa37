package peers

import (
	"context"
	"errors"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// Runlimit's store configuration; see the package documentation.
const (
	StoreShards  = 64
	StoreMaxKeys = 2_000_000
)

// policy allows every check a benchmark makes: the largest limit over the
// longest window.
var policy = domain.MustPolicy("bench.peers", "client", domain.MaxLimit, domain.MaxWindow)

// benchSecret is a fixed HMAC secret: the keys only need to be distinct.
var benchSecret = []byte("peers: a fixed benchmark secret of 32+ bytes")

// runlimit goes through app.Limiter.Check, as hosts call it. With perCheck
// set, Allow derives each check's subject key from the subject string;
// otherwise from checks built once.
type runlimit struct {
	store    *memory.Store
	limiter  *app.Limiter
	hasher   domain.KeyHasher
	ctx      context.Context
	subjects []string
	checks   []domain.Check // nil when perCheck
	perCheck bool
	stop     func()
	probes   map[string]int64 // Counted's own checks, per subject
}

func newRunlimitHMAC(subjects []string) (Limiter, error) {
	return newRunlimit(subjects, true, nil, func() {})
}

func newRunlimitOnce(subjects []string) (Limiter, error) {
	return newRunlimit(subjects, false, nil, func() {})
}

func newRunlimitCoarse(subjects []string) (Limiter, error) {
	c := memory.NewCoarseClock()
	return newRunlimit(subjects, false, c, c.Stop)
}

func newRunlimit(subjects []string, perCheck bool, clock memory.Clock, stop func()) (Limiter, error) {
	hasher, err := domain.NewKeyHasher(benchSecret)
	if err != nil {
		stop()
		return nil, err
	}
	store, err := memory.New(memory.Config{MaxKeys: StoreMaxKeys, Shards: StoreShards, Clock: clock})
	if err != nil {
		stop()
		return nil, err
	}
	lim, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		_ = store.Close()
		stop()
		return nil, err
	}
	r := &runlimit{
		store: store, limiter: lim, hasher: hasher, ctx: context.Background(),
		subjects: subjects, perCheck: perCheck, stop: stop, probes: map[string]int64{},
	}
	if !perCheck {
		r.checks = make([]domain.Check, len(subjects))
		for i, s := range subjects {
			r.checks[i] = domain.NewCheck(policy, hasher.KeyString(policy, s))
		}
	}
	return r, nil
}

func (r *runlimit) Allow(i int) bool {
	if r.perCheck {
		return r.allow(domain.NewCheck(policy, r.hasher.KeyString(policy, r.subjects[i])))
	}
	// The check goes from the slice straight into Check, as a host passes
	// a check it holds: no copy of it into a helper's argument first.
	d, err := r.limiter.Check(r.ctx, r.checks[i])
	return err == nil && d.Outcome() == domain.Allowed
}

func (r *runlimit) AllowSubject(s string) bool {
	return r.allow(domain.NewCheck(policy, r.hasher.KeyString(policy, s)))
}

func (r *runlimit) allow(c domain.Check) bool {
	d, err := r.limiter.Check(r.ctx, c)
	return err == nil && d.Outcome() == domain.Allowed
}

// Counted checks s once more and reads the allowance: the limit less what
// remains is every check counted, this one and earlier probes included.
func (r *runlimit) Counted(s string) (int64, error) {
	d, err := r.limiter.Check(r.ctx, domain.NewCheck(policy, r.hasher.KeyString(policy, s)))
	if err != nil {
		return 0, err
	}
	a, ok := d.Allowance()
	if !ok {
		return 0, errors.New("runlimit: the probe was not allowed")
	}
	r.probes[s]++
	return a.Limit - a.Remaining - r.probes[s], nil
}

// Tracked reports -1 when the store cannot say, which no benchmark
// accepts as its key count.
func (r *runlimit) Tracked() (int, bool) {
	st, err := r.store.Stats(r.ctx)
	if err != nil {
		return -1, true
	}
	return int(st.Entries), true
}

func (r *runlimit) Close() {
	_ = r.store.Close()
	r.stop()
}
