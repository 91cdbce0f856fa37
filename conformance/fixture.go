package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// window is the suite's usual window: long enough that a database clock
// that keeps running never ends a window by itself while a case runs, so
// only Advance does.
const window = time.Hour

// start is where every case's time begins, by one Advance from the
// store's zero: an odd number of microseconds past a whole second, so that
// a store that keeps its times in seconds, milliseconds or a float64
// misplaces every window it anchors, and the exact durations show it.
const start = 1_000*time.Hour + 1_234_567*time.Microsecond

// fixture is one case's fresh store, the limiter over it and the helpers
// that turn a broken guarantee into a message naming it.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	opts  Options
	inst  Instance
	caps  capabilities
	rep   *report
	log   *oplog
	began time.Time // wall clock when the case began, bounding a running store clock

	// path is how single checks are applied in this run of the case.
	path path
	// single is the store's single-check path, nil when it has none.
	single ports.CheckAdmitter
	// limiter applies batches, and single checks on viaBatchOfOne, through
	// Admit only: it sees the store through admitOnly, so it never takes
	// the single-check path by itself.
	limiter *app.Limiter
	admits  atomic.Int64
	parts   int
	// raceHeld: the last race held its workers' clock reads, which it can
	// only when the store reads a ManualClock; the operation log says so.
	raceHeld bool

	// errs holds every error the store returned in this case (see guard),
	// for the check, when the case ends, that none shows a key.
	errMu sync.Mutex
	errs  []error

	// goid is the case's own goroutine, whose calls into the store guard
	// bounds with callBound.
	goid int64

	// on names the replica in the operation log ("A: ", "B: ") once the
	// case has opened a second one (see replica), and is empty before.
	on string
}

// callBound is how long the suite waits for one call into the store, made
// from a case's own goroutine, or for a race to finish one more operation,
// before it fails the case: a correct store finishes or fails each call
// within its own timeouts long before, and returns once its context is
// done. It is a variable so that the suite's own tests can shorten it.
var callBound = 30 * time.Second

// bounded calls op, as guard does, on a goroutine of its own, and fails
// the case when op has not returned after callBound. The goroutine is then
// left behind, blocked in the store, and the report fails every case that
// has not started yet instead of letting each wait as long: a store that
// blocks one call forever blocks others too.
func (f *fixture) bounded(op func() error) error {
	f.t.Helper()
	returned, err := boundedGuard(op)
	if returned {
		return err
	}
	f.rep.blocked.Store(true)
	f.log.add("a call into the store did not return within %v", callBound)
	require.FailNow(f.t, blockedRule,
		"a call into the store has not returned after %v, and still blocks: a store must answer every call, "+
			"and return once its context is done", callBound)
	return nil
}

// boundedGuard calls op, as guard does, on a goroutine of its own, and
// reports whether it returned within callBound.
func boundedGuard(op func() error) (returned bool, err error) {
	done := make(chan error, 1)
	go func() { done <- guard(op) }()
	timer := time.NewTimer(callBound)
	defer timer.Stop()
	select {
	case err := <-done:
		return true, err
	case <-timer.C:
		return false, nil
	}
}

// blockedRule names the guarantee a store that blocks breaks.
const blockedRule = "calls return: every call into the store returns"

// admitOnly shows a store to the limiter with Admit alone, counting calls.
type admitOnly struct{ f *fixture }

func (a admitOnly) Admit(ctx context.Context, b *domain.Batch) error {
	a.f.admits.Add(1)
	a.f.rep.admits.Add(1)
	return a.f.inst.Store.Admit(ctx, b)
}

func setup(t *testing.T, newStore NewStoreFunc, opts Options, p path, caps capabilities, rep *report) *fixture {
	t.Helper()
	t.Cleanup(func() {
		if t.Skipped() {
			rep.skipped.Add(1)
		}
	})
	inst := newStore(t, opts)
	checkInstance(t, inst)
	require.Equal(t, caps.has, capabilitiesOf(inst.Store),
		"harness: this case's store (%T) offers other optional capabilities than the first one", inst.Store)
	if inst.Clock != nil {
		inst.ExactTime = true
		if inst.Advance == nil {
			inst.Advance = inst.Clock.Advance
		}
	}
	f := &fixture{
		t: t, ctx: t.Context(), opts: opts, inst: inst, caps: caps, rep: rep, log: newOplog(),
		began: time.Now(), path: p, parts: caps.parts, goid: goid(),
	}
	if rep.blocked.Load() {
		require.FailNow(t, blockedRule, "not run: a call into the store of another case blocked for %v and still has not "+
			"returned; this case would wait as long", callBound)
	}
	if p == viaAdmitCheck {
		f.single = inst.Store.(ports.CheckAdmitter)
	}
	// app.Limiter drives every batch, as it does for hosts.
	l, err := app.NewLimiter(admitOnly{f}, app.LimiterConfig{MaxBatchSize: opts.MaxBatchSize})
	require.NoError(t, err, "harness: Options.MaxBatchSize")
	f.limiter = l
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operations on this case's fresh store (single checks via %s, Options %+v):\n%s", p, opts, f.log)
		}
	})
	// Registered after the log's, so it runs first and the log follows a
	// failure.
	t.Cleanup(f.requireNoKeyInErrors)
	f.inst.Advance(t, start)
	return f
}

// policy returns an enforce-mode policy with the suite's usual identifiers.
func (f *fixture) policy(limit int64, w time.Duration) domain.Policy {
	return f.policyOf("conformance.check", "subject", limit, w)
}

func (f *fixture) policyOf(id, scope string, limit int64, w time.Duration) domain.Policy {
	f.t.Helper()
	pid, err := domain.NewPolicyID(id)
	require.NoError(f.t, err)
	sid, err := domain.NewScopeID(scope)
	require.NoError(f.t, err)
	p, err := domain.NewPolicy(pid, sid, limit, w)
	require.NoError(f.t, err)
	f.log.namePolicy(p)
	return p
}

// shadow returns p in shadow mode: the same fingerprint, so the same
// counters.
func (f *fixture) shadow(p domain.Policy) domain.Policy {
	f.t.Helper()
	s, err := p.WithMode(domain.Shadow)
	require.NoError(f.t, err)
	return s
}

// key returns a random subject key, so that no two cases (nor two runs on a
// shared database) ever meet on a counter.
func (f *fixture) key() domain.SubjectKey {
	k := randomKey()
	f.log.nameKey(k, 0, 1)
	return k
}

func randomKey() domain.SubjectKey {
	var b [32]byte
	// crypto/rand.Read never returns an error; it crashes the program when
	// the system's generator fails.
	_, _ = rand.Read(b[:])
	return domain.SubjectKeyFromBytes(b)
}

func (f *fixture) keys(n int) []domain.SubjectKey {
	ks := make([]domain.SubjectKey, n)
	for i := range ks {
		ks[i] = f.key()
	}
	return ks
}

func (f *fixture) check(p domain.Policy, k domain.SubjectKey) domain.Check {
	return domain.NewCheck(p, k)
}

func (f *fixture) checkCost(p domain.Policy, k domain.SubjectKey, cost int64) domain.Check {
	f.t.Helper()
	c, err := domain.NewCheckCost(p, k, cost)
	require.NoError(f.t, err)
	return c
}

// apply applies one check on path p and logs it.
func (f *fixture) apply(c domain.Check, p path) (domain.Decision, error) {
	return f.applyWith(f.ctx, "", c, p)
}

// applyWith applies one check on path p with ctx, described in the
// operation log as ctxName (nothing for the case's own context), and logs
// it.
func (f *fixture) applyWith(ctx context.Context, ctxName string, c domain.Check, p path) (domain.Decision, error) {
	var d domain.Decision
	err := f.guard(func() (err error) {
		if p == viaAdmitCheck {
			f.rep.called(CheckAdmitter)
			d, err = f.inst.Store.(ports.CheckAdmitter).AdmitCheck(ctx, c)
		} else {
			d, err = f.limiter.Check(ctx, c)
		}
		return err
	})
	with := ""
	if ctxName != "" {
		with = " with " + ctxName
	}
	if err != nil {
		f.log.add("%scheck %s via %s%s → error: %v", f.on, f.log.check(c), p, with, err)
	} else {
		f.log.add("%scheck %s via %s%s → %s", f.on, f.log.check(c), p, with, describe(d))
	}
	return d, err
}

// decide applies one check on the case's path; a store error fails the
// case under guarantee.
func (f *fixture) decide(c domain.Check, guarantee string) domain.Decision {
	f.t.Helper()
	return f.decideVia(c, f.path, guarantee)
}

func (f *fixture) decideVia(c domain.Check, p path, guarantee string) domain.Decision {
	f.t.Helper()
	d, err := f.apply(c, p)
	require.NoError(f.t, err, "%s: the store failed a valid check", guarantee)
	return d
}

// allow applies one check that must be allowed with remaining units left.
func (f *fixture) allow(c domain.Check, remaining int64, guarantee string) domain.Allowance {
	f.t.Helper()
	return f.allowVia(c, f.path, remaining, guarantee)
}

func (f *fixture) allowVia(c domain.Check, p path, remaining int64, guarantee string) domain.Allowance {
	f.t.Helper()
	d := f.decideVia(c, p, guarantee)
	a, ok := d.Allowance()
	require.True(f.t, ok, "%s: want allowed with %d remaining, got %s", guarantee, remaining, describe(d))
	require.Equal(f.t, c.Policy().Limit(), a.Limit, "%s: the allowance must carry the policy's limit", guarantee)
	require.Equal(f.t, remaining, a.Remaining, "%s: remaining units after the check", guarantee)
	return a
}

// deny applies one check that must be denied (not shadow-denied) for
// reason.
func (f *fixture) deny(c domain.Check, reason domain.DenialReason, guarantee string) domain.Denial {
	f.t.Helper()
	return f.refuseVia(c, f.path, domain.Denied, reason, guarantee)
}

// refuse applies one check that must end with outcome (denied or
// shadow-denied) for reason.
func (f *fixture) refuse(c domain.Check, outcome domain.Outcome, reason domain.DenialReason, guarantee string) domain.Denial {
	f.t.Helper()
	return f.refuseVia(c, f.path, outcome, reason, guarantee)
}

func (f *fixture) refuseVia(c domain.Check, p path, outcome domain.Outcome, reason domain.DenialReason, guarantee string) domain.Denial {
	f.t.Helper()
	d := f.decideVia(c, p, guarantee)
	den, _ := d.Denial()
	// Compare names, so a failure prints "denied (quota)" rather than the
	// enums' numbers.
	require.Equal(f.t, outcome.String()+" ("+reason.String()+")", d.Outcome().String()+" ("+den.Reason().String()+")",
		"%s: got %s", guarantee, describe(d))
	return den
}

// admit applies checks as one batch; a store error fails the case.
func (f *fixture) admit(checks []domain.Check, guarantee string) domain.BatchDecision {
	f.t.Helper()
	var bd domain.BatchDecision
	err := f.guard(func() (err error) {
		bd, err = f.limiter.CheckAll(f.ctx, checks)
		return err
	})
	if err != nil {
		f.log.add("%sbatch %s via Admit → error: %v", f.on, f.log.batch(checks), err)
	} else {
		f.log.add("%sbatch %s via Admit → %s", f.on, f.log.batch(checks), describeBatch(bd))
	}
	require.NoError(f.t, err, "%s: the store failed a valid batch", guarantee)
	return bd
}

// admitAllowed applies checks as one batch that must be allowed, and
// returns the remaining units of each check in caller order.
func (f *fixture) admitAllowed(checks []domain.Check, guarantee string) []int64 {
	f.t.Helper()
	bd := f.admit(checks, guarantee)
	require.Equal(f.t, domain.Allowed, bd.Outcome(), "%s: want the batch allowed, got %s", guarantee, describeBatch(bd))
	require.Len(f.t, bd.Decisions(), len(checks), "%s: one decision per check", guarantee)
	rem := make([]int64, len(checks))
	for i, d := range bd.Decisions() {
		a, ok := d.Allowance()
		require.True(f.t, ok, "%s: decision %d of an allowed batch must be allowed, got %s", guarantee, i, describe(d))
		rem[i] = a.Remaining
	}
	return rem
}

// admitDenied applies checks as one batch that must be denied at index for
// reason, and returns the denial.
func (f *fixture) admitDenied(checks []domain.Check, index int, reason domain.DenialReason, guarantee string) domain.Denial {
	f.t.Helper()
	bd := f.admit(checks, guarantee)
	i, den, ok := bd.Denied()
	require.True(f.t, ok && bd.Outcome() == domain.Denied,
		"%s: want the batch denied at check %d (%s), got %s", guarantee, index, reason, describeBatch(bd))
	require.Equal(f.t, fmt.Sprintf("check %d (%s)", index, reason), fmt.Sprintf("check %d (%s)", i, den.Reason()),
		"%s: the denied check, in caller order; got %s", guarantee, describeBatch(bd))
	require.Equal(f.t, len(checks), bd.Size(), "%s: the decision reports the batch size", guarantee)
	return den
}

func (f *fixture) advance(d time.Duration) {
	f.t.Helper()
	f.inst.Advance(f.t, d)
	f.log.advanced(d)
}

// requireDuration checks a reset or retry time against want, the value a
// clock that moves only through Advance gives. A clock that keeps running
// can only have shortened it since, and by no more than the real time the
// case has taken so far.
func (f *fixture) requireDuration(want, got time.Duration, guarantee string) {
	f.t.Helper()
	if f.inst.ExactTime {
		require.Equal(f.t, want, got, "%s: the store's clock moves only through Advance, so the time is exact", guarantee)
		return
	}
	require.Positive(f.t, got, "%s: the window is still active, so the time left must be positive", guarantee)
	require.LessOrEqual(f.t, got, want, "%s: time passed since, so the time left cannot exceed %v", guarantee, want)
	// The store's clock ran for at most the real time since the case began
	// (plus the microsecond a database rounds to).
	floor := want - time.Since(f.began) - time.Microsecond
	require.GreaterOrEqual(f.t, got, floor,
		"%s: want %v less at most the %v that really passed since the case began, got %v", guarantee, want, want-floor, got)
}

// requireRetry checks that a denial carries a retry time and checks it as
// requireDuration does.
func (f *fixture) requireRetry(d domain.Denial, want time.Duration, guarantee string) {
	f.t.Helper()
	retry, ok := d.RetryAfter()
	require.True(f.t, ok, "%s: a quota denial must say when to retry", guarantee)
	f.requireDuration(want, retry, guarantee)
}

// skip skips the case as not applicable to the store, and has Run's
// summary count it under reason.
func (f *fixture) skip(reason string) {
	f.t.Helper()
	f.rep.skip(reason)
	f.t.Skip(reason)
}

// stats returns the store's occupancy when it reports one.
func (f *fixture) stats() (ports.Stats, bool) {
	f.t.Helper()
	sr, ok := f.inst.Store.(ports.StatsReporter)
	if !ok {
		return ports.Stats{}, false
	}
	f.rep.called(StatsReporter)
	var s ports.Stats
	err := f.guard(func() (err error) {
		s, err = sr.Stats(f.ctx)
		return err
	})
	if err != nil {
		f.log.add("%sStats → error: %v", f.on, err)
	} else {
		f.log.add("%sStats → %s", f.on, describeStats(s, f.opts.Capacity))
	}
	require.NoError(f.t, err, "stats: Stats failed")
	return s, true
}

// cleaner returns the store's cleanup, with the case's context, when it
// offers one.
func (f *fixture) cleaner() (func(max int) (int, error), bool) {
	if _, ok := f.inst.Store.(ports.Cleaner); !ok {
		return nil, false
	}
	return func(max int) (int, error) { return f.cleanupWith(f.ctx, "", max) }, true
}

// cleanupWith calls the store's CleanupExpired with ctx, described in the
// operation log as ctxName (nothing for the case's own context), and logs
// the answer. The store must be a [ports.Cleaner].
func (f *fixture) cleanupWith(ctx context.Context, ctxName string, max int) (int, error) {
	f.rep.called(Cleaner)
	var n int
	err := f.guard(func() (err error) {
		n, err = f.inst.Store.(ports.Cleaner).CleanupExpired(ctx, max)
		return err
	})
	args := fmt.Sprint(max)
	if ctxName != "" {
		args = ctxName + ", " + args
	}
	if err != nil {
		f.log.add("%sCleanupExpired(%s) → %d, error: %v", f.on, args, n, err)
	} else {
		f.log.add("%sCleanupExpired(%s) → %d", f.on, args, n)
	}
	return n, err
}

// guard calls op, a call into the store, as guard does, and keeps the
// error it returns for requireNoKeyInErrors. An error (or a panic) that
// shows a key the case made is returned as a [*withheldError], so that the
// suite's own messages and operation log never print the key: the case
// fails under the errors rule when it ends.
func (f *fixture) guard(op func() error) error {
	var err error
	if goid() == f.goid {
		err = f.bounded(op)
	} else {
		// A racing goroutine: the race bounds its wait itself, and the
		// schedule knows the store's call by this goroutine's id.
		err = guard(op)
	}
	if err == nil {
		return nil
	}
	f.errMu.Lock()
	f.errs = append(f.errs, err)
	f.errMu.Unlock()
	if leak := f.log.keyLeak(err); leak != "" {
		return &withheldError{err: err, leak: leak}
	}
	return err
}

// requireNoKeyInErrors fails the case when an error its store returned
// shows the bytes of a key the case made: error text reaches logs, and an
// error value's exported fields reach whatever prints or serialises it.
func (f *fixture) requireNoKeyInErrors() {
	f.errMu.Lock()
	errs := append([]error(nil), f.errs...)
	f.errMu.Unlock()
	if len(errs) == 0 {
		return
	}
	for _, err := range errs {
		if leak := f.log.keyLeak(err); leak != "" {
			f.t.Errorf("errors: no error a store returns may show a subject key, in its text or its exported fields "+
				"(json.Marshal and spew print them): an error of this case's store (%T): %s", err, leak)
			return
		}
	}
}

// guard calls op and turns a panic in the store into a [*panicError], so
// that a case fails naming its guarantee, with its operation log, instead
// of crashing the test binary.
//
// It also turns a typed nil (a nil *T returned as an error, which is not
// a nil error) into a [*typedNilError]: the caller sees a failure, as the
// store's own caller would, and the suite reports it rather than panicking
// when it prints the error.
func guard(op func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r}
		}
	}()
	err = op()
	if err != nil {
		if v := reflect.ValueOf(err); v.Kind() == reflect.Pointer && v.IsNil() {
			return &typedNilError{typ: fmt.Sprintf("%T", err)}
		}
	}
	return err
}

// typedNilError is a nil pointer the store returned as a non-nil error.
type typedNilError struct{ typ string }

func (e *typedNilError) Error() string {
	return fmt.Sprintf("the store returned a nil %s as a non-nil error (a typed nil: return a literal nil instead)", e.typ)
}

// panicError is a panic that escaped the store.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("the store panicked: %v", e.value) }

// withheldError stands in for a store's error that shows a subject key: it
// matches what the error matches (errors.Is and errors.As reach it through
// Is and As, and it has no Unwrap for a printer to follow), and its text
// says only which key it shows and how.
type withheldError struct {
	err  error
	leak string
}

func (e *withheldError) Error() string {
	return fmt.Sprintf("[the store's %T is withheld: %s]", e.err, e.leak)
}

func (e *withheldError) Is(target error) bool { return errors.Is(e.err, target) }

func (e *withheldError) As(target any) bool { return errors.As(e.err, target) }
