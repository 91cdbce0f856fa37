package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// result is one goroutine's view of one check or batch, sent back to the
// test goroutine, which alone may fail the test.
type result struct {
	outcome   domain.Outcome
	remaining []int64
	reset     time.Duration   // a single check's reset time, when allowed
	resets    []time.Duration // each check's reset time, when a batch is allowed
	reason    domain.DenialReason
	removed   int // what a cleanup removed
	err       error
}

// worker is one goroutine of a race: it applies its operations in order.
// Workers of wave 0 start first; in a held race the next wave starts once
// every worker of the previous one holds its locks (it is inside the clock
// read) or waits for one (it is parked in the store), and every watched
// one has finished or stayed parked (see waitWave).
type worker struct {
	name string
	wave int
	ops  []raceOp
	// watched: in a held race, the worker's clock reads are never held;
	// the schedule only watches it, so that it fails the case when it
	// stays blocked inside the store.
	watched bool
	// pinned: in a held race, the worker's first clock read is pinned
	// just after its sample until every worker of the last wave holds its
	// locks or waits for one, however long the others take to get there.
	pinned bool
}

// raceOp is one operation of a worker, applied on the worker's goroutine.
type raceOp func(ctx context.Context) result

const (
	// stuckFor is how long every unfinished worker of a scheduled race must
	// stay parked in the store, none inside the clock, before the case
	// fails as a deadlock: each waits for a lock another holds.
	stuckFor = time.Second
)

// race runs workers concurrently and returns each one's results in order.
// When held is set, every read of a ManualClock by a worker is held until
// the other workers are quiet (see schedule.go); otherwise, and on a store
// that reads no ManualClock, the workers race freely. A race that deadlocks fails the case,
// naming the workers left waiting, without waiting for them.
func (f *fixture) race(guarantee string, held bool, workers []worker) [][]result {
	f.t.Helper()
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	var s *schedule
	if held {
		s = newSchedule()
		defer s.end()
	}
	results := make([][]result, len(workers))
	var progress atomic.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	waves := 0
	for _, w := range workers {
		waves = max(waves, w.wave+1)
	}
	var pins []*pin
	defer func() {
		for _, p := range pins {
			p.free()
		}
	}()
	if s != nil {
		// Members of later waves count as not started from now on, so
		// that a held clock read of an earlier wave waits for them to
		// join, enter the store and park.
		for _, w := range workers {
			if w.wave > 0 {
				s.pending.Add(1)
			}
		}
	}
	var members []*member
	for wave := range waves {
		start := make(chan struct{})
		joined := make(chan *member, len(workers))
		n := 0
		for i, w := range workers {
			if w.wave != wave {
				continue
			}
			n++
			var pn *pin
			if s != nil && w.pinned {
				pn = newPin()
				pins = append(pins, pn)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var m *member
				if s != nil {
					m = s.add(&member{name: w.name, free: w.watched, pin: pn})
					if w.wave > 0 {
						s.pending.Add(-1)
					}
				}
				joined <- m
				<-start
				for _, op := range w.ops {
					m.enter()
					r := op(ctx)
					m.leave()
					results[i] = append(results[i], r)
					progress.Add(1)
				}
				m.finish()
			}()
		}
		members = make([]*member, 0, n)
		for range n {
			members = append(members, <-joined)
		}
		close(start)
		if s != nil && wave+1 < waves {
			f.waitWave(s, members)
		}
	}
	if len(pins) > 0 {
		f.waitWave(s, members)
		for _, p := range pins {
			p.free()
		}
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	f.waitRace(guarantee, s, done, &progress)
	f.raceHeld = s != nil && s.sawClock.Load()
	return results
}

// waitWave waits until a wave of members has gone as far as it can while
// the pinned members wait: each watched member has finished or stayed
// parked in the store for blockedFor (its clock reads are not held, so
// being inside one, or parked for an instant, says nothing: a cleanup
// that samples the time before it takes any lock is then still to come),
// and each other member is settled.
func (f *fixture) waitWave(s *schedule, members []*member) {
	for _, m := range members {
		if m.free {
			f.waitBlockedOrDone(s, m)
		}
	}
	f.waitSettled(s, members)
}

// waitSettled waits until each of members holds its locks or waits for
// one, for a while at most (maxHold, or maxStartWait while one of them has
// not yet entered the store): a later wave that starts early only makes
// the race less pointed.
func (f *fixture) waitSettled(s *schedule, members []*member) {
	start := time.Now()
	var lk looks
	for !s.settled(&lk, members...) {
		waited := time.Since(start)
		if waited >= maxStartWait || waited >= maxHold && !anyNotEntered(members) {
			return
		}
		time.Sleep(pollEvery)
	}
}

// anyNotEntered reports whether one of members, not finished, has not yet
// called the store.
func anyNotEntered(members []*member) bool {
	for _, m := range members {
		if !m.done.Load() && !m.entered.Load() {
			return true
		}
	}
	return false
}

// waitRace waits for every worker to finish, and fails the case when they
// deadlock or stop making progress.
func (f *fixture) waitRace(guarantee string, s *schedule, done <-chan struct{}, progress *atomic.Int64) {
	f.t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	last, lastAt := progress.Load(), time.Now()
	var watch stuckWatch
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		if p := progress.Load(); p != last {
			last, lastAt, watch = p, time.Now(), stuckWatch{}
		}
		// Reading every goroutine's state stops the world: look only once
		// the race has gone quiet for a while, and only for a store that
		// reads a ManualClock, whose racers wait only on each other (a
		// database's may wait on the server for a long time).
		if s != nil && s.sawClock.Load() && time.Since(lastAt) >= 100*time.Millisecond {
			if names, ok := s.stuck(); watch.saw(ok, time.Now()) {
				f.log.add("race: deadlock: %s wait inside the store, each for a lock another holds", strings.Join(names, ", "))
				require.FailNow(f.t, guarantee, "deadlock: %s stayed blocked inside the store for %v with no admission holding "+
					"its locks: each waits for a lock another holds. Lock every key of a batch in one global order "+
					"(the counter keys' byte order, or the order of their partitions)", strings.Join(names, ", "), stuckFor)
			}
		}
		if time.Since(lastAt) >= callBound {
			f.log.add("race: no operation finished for %v", callBound)
			require.FailNow(f.t, guarantee, "no operation finished for %v: the store is deadlocked or stalled", callBound)
		}
	}
}

// checkOp applies one check on path p.
func (f *fixture) checkOp(c domain.Check, p path) raceOp {
	return func(ctx context.Context) result {
		var (
			d   domain.Decision
			err error
		)
		err = f.guard(func() (err error) {
			if p == viaAdmitCheck {
				f.rep.called(CheckAdmitter)
				d, err = f.inst.Store.(ports.CheckAdmitter).AdmitCheck(ctx, c)
			} else {
				d, err = f.limiter.Check(ctx, c)
			}
			return err
		})
		if err != nil {
			return result{err: err}
		}
		r := result{outcome: d.Outcome()}
		if den, ok := d.Denial(); ok {
			r.reason = den.Reason()
		}
		if a, ok := d.Allowance(); ok {
			r.remaining = []int64{a.Remaining}
			r.reset = a.ResetAfter
		}
		return r
	}
}

// batchOp applies checks as one batch through Admit.
func (f *fixture) batchOp(checks []domain.Check) raceOp {
	return func(ctx context.Context) result {
		var bd domain.BatchDecision
		err := f.guard(func() (err error) {
			bd, err = f.limiter.CheckAll(ctx, checks)
			return err
		})
		if err != nil {
			return result{err: err}
		}
		r := result{outcome: bd.Outcome()}
		if _, den, ok := bd.Denied(); ok {
			r.reason = den.Reason()
		}
		for _, d := range bd.Decisions() {
			a, _ := d.Allowance()
			r.remaining = append(r.remaining, a.Remaining)
			r.resets = append(r.resets, a.ResetAfter)
		}
		return r
	}
}

// cleanupOp calls the store's CleanupExpired with max; the store must be a
// [ports.Cleaner].
func (f *fixture) cleanupOp(max int) raceOp {
	return func(ctx context.Context) result {
		f.rep.called(Cleaner)
		var r result
		r.err = f.guard(func() (err error) {
			r.removed, err = f.inst.Store.(ports.Cleaner).CleanupExpired(ctx, max)
			return err
		})
		return r
	}
}

// statsOp calls the store's Stats; the store must be a
// [ports.StatsReporter].
func (f *fixture) statsOp() raceOp {
	return func(ctx context.Context) result {
		f.rep.called(StatsReporter)
		return result{err: f.guard(func() (err error) {
			_, err = f.inst.Store.(ports.StatsReporter).Stats(ctx)
			return err
		})}
	}
}

// notHeld says why a race the case meant to hold ran freely: the suite
// holds admissions only inside a ManualClock read, and the store (one over
// a server's clock, say) made none.
const notHeld = "not held: the store read no ManualClock"

// heldInClock describes, for the operation log, the worker of the last
// race that the case meant to hold inside its clock read: held there only
// when the store read a ManualClock, and racing otherwise (logRace then
// says why).
func (f *fixture) heldInClock() string {
	if f.raceHeld {
		return "held in the clock read"
	}
	return "racing"
}

// repeat returns op n times.
func repeat(n int, op raceOp) []raceOp {
	ops := make([]raceOp, n)
	for i := range ops {
		ops[i] = op
	}
	return ops
}

// logRace records a race's shape and outcome in the operation log.
func (f *fixture) logRace(shape string, held bool, results [][]result) {
	allowed, denied, failed := 0, 0, 0
	for _, rs := range results {
		for _, r := range rs {
			switch {
			case r.err != nil:
				failed++
			case r.outcome == domain.Allowed:
				allowed++
			default:
				denied++
			}
		}
	}
	how := "racing freely"
	switch {
	case held && f.raceHeld:
		how = "each read of a ManualClock held until the other goroutines waited"
	case held:
		how = "racing freely (" + notHeld + ")"
	}
	f.log.add("race: %s, %s → %d allowed, %d denied, %d failed", shape, how, allowed, denied, failed)
}

// requireExactCount checks that the allowed checks of a race on one counter
// of limit each took one unit the others did not see: no error, exactly
// want allowed, and each remaining value reported once.
func (f *fixture) requireExactCount(results [][]result, limit int64, want int, guarantee string) {
	f.t.Helper()
	seen := make(map[int64]int)
	allowed := 0
	for _, rs := range results {
		for _, r := range rs {
			require.NoError(f.t, r.err, "%s: the store failed a valid check", guarantee)
			if r.outcome != domain.Allowed {
				require.Equal(f.t, domain.Denied.String()+" "+domain.QuotaExhausted.String(), r.outcome.String()+" "+r.reason.String(),
					"%s: a check is allowed or denied for quota", guarantee)
				continue
			}
			allowed++
			seen[r.remaining[0]]++
		}
	}
	var twice []string
	for rem := limit - int64(want); rem < limit; rem++ {
		if seen[rem] != 1 {
			twice = append(twice, fmt.Sprintf("remaining %d reported %d times", rem, seen[rem]))
		}
	}
	require.Empty(f.t, twice, "%s: lost or doubled updates: two checks read the same count, so one's unit was lost "+
		"(the store let a second admission read the counter before the first wrote it back)", guarantee)
	require.Equal(f.t, want, allowed, "%s: %d checks were allowed", guarantee, allowed)
}

// blockedFor is how long the second admission of a pinned race must stay
// parked inside the store before the first is released: long enough that
// a goroutine parked only in passing (a short mutex, the garbage
// collector) is not taken for one waiting on the first admission's locks.
const blockedFor = 10 * time.Millisecond

// pinnedRace runs first, and when it reads a ManualClock, pins it just
// after its first clock sample: the sample is taken, and the read does not
// return until the race releases it. While first is pinned, meanwhile runs
// on the test goroutine (it may move time), then second runs on a
// goroutine of its own, and first is released once second has finished or
// has stayed parked inside the store for blockedFor.
//
// A store that samples its clock with every lock of the admission held
// keeps second out until first has written, so second decides after first
// at a later time. A store that samples its clock before taking its locks
// lets second through, and first then decides at a time that has passed,
// on the state second wrote after it. held reports whether first was
// pinned; on a store that reads no ManualClock, first runs to its end
// before meanwhile and second, and the race proves nothing about the
// order of its clock read and its locks.
func (f *fixture) pinnedRace(guarantee string, first raceOp, meanwhile func(), second raceOp) (r1, r2 result, held bool) {
	f.t.Helper()
	r1, r2, held, _ = f.pinnedRaceReads(guarantee, first, meanwhile, second)
	return r1, r2, held
}

// pinnedRaceReads is pinnedRace that also reports how often first read
// the clock after its pinned sample.
func (f *fixture) pinnedRaceReads(guarantee string, first raceOp, meanwhile func(), second raceOp) (r1, r2 result, held bool, later int64) {
	f.t.Helper()
	return f.pinnedRaceStaged(guarantee, first, meanwhile, second, nil)
}

// pinnedRaceStaged is pinnedRaceReads with one more stage: beforeRelease,
// when not nil, runs on the test goroutine once second has finished or
// stays parked inside the store, just before first is released (it may
// move time, so that first's later clock reads come after second's). On a
// store that reads no ManualClock it runs after meanwhile, before second
// starts: first has already run to its end.
func (f *fixture) pinnedRaceStaged(guarantee string, first raceOp, meanwhile func(), second raceOp, beforeRelease func()) (r1, r2 result, held bool, later int64) {
	f.t.Helper()
	s := newSchedule()
	defer s.end()
	p := newPin()
	defer p.free()
	done1 := make(chan result, 1)
	go func() {
		m := s.add(&member{name: "first", pin: p})
		m.enter()
		r := first(f.ctx)
		m.leave()
		m.finish()
		done1 <- r
	}()
	var got1 bool
	select {
	case <-p.sampled:
		held = true
	case r1 = <-done1:
		got1 = true
	case <-time.After(callBound):
		require.FailNow(f.t, guarantee, "the first admission neither read the clock nor finished in %v: the store is stalled", callBound)
	}
	meanwhile()
	if !held && beforeRelease != nil {
		beforeRelease()
	}
	joined := make(chan *member, 1)
	done2 := make(chan result, 1)
	go func() {
		m := s.add(&member{name: "second", free: true})
		joined <- m
		m.enter()
		r := second(f.ctx)
		m.leave()
		m.finish()
		done2 <- r
	}()
	m2 := <-joined
	if held {
		f.waitBlockedOrDone(s, m2)
		if beforeRelease != nil {
			beforeRelease()
		}
		p.free()
	}
	timeout := time.After(callBound)
	for got2 := false; !got1 || !got2; {
		select {
		case r1 = <-done1:
			got1 = true
		case r2 = <-done2:
			got2 = true
		case <-timeout:
			require.FailNow(f.t, guarantee, "the two admissions did not finish in %v: the store is deadlocked or stalled", callBound)
		}
	}
	return r1, r2, held, p.later.Load()
}

// waitBlockedOrDone waits until m has finished, or has stayed parked
// inside the store for blockedFor, for maxHold at most once m has called
// the store (maxStartWait before): a store that spins instead of parking
// only makes the race less pointed.
func (f *fixture) waitBlockedOrDone(s *schedule, m *member) {
	f.waitParkedOrDone(s, m, nil)
}

// waitParkedOrDone is waitBlockedOrDone for a member that may also be
// pinned after a clock sample, which it signals on sampled (nil for none):
// such a member waits for as long as the store lets it take its sample,
// up to maxStartWait, not maxHold.
func (f *fixture) waitParkedOrDone(s *schedule, m *member, sampled <-chan struct{}) {
	start := time.Now()
	var since time.Time
	var lk looks
	for !m.done.Load() {
		select {
		case <-sampled:
			return
		default:
		}
		// A member that has not yet called the store is only slow to
		// start.
		waited := time.Since(start)
		if waited >= maxStartWait || sampled == nil && waited >= maxHold && m.entered.Load() {
			return
		}
		switch {
		case !s.parkedInStore(&lk, m):
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= blockedFor:
			return
		}
		time.Sleep(pollEvery)
	}
}
