package conformance

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A schedule forces the interleavings that concurrency bugs need, on a
// store that reads a [ManualClock].
//
// The protocol has a store read its clock once per admission, after it
// holds every lock the admission needs and before it writes. So while the
// clock holds an admission inside Now, a correct store keeps every other
// admission of the same keys out: they wait on its locks. A store that
// reads, then unlocks, then decides or writes lets them in, and they read
// the same state: when both write, an update is lost, which the case sees
// in its exact counts.
//
// Each clock read of a member goroutine is held until every other member
// is quiet: finished, inside the clock itself, or parked inside the store
// (blocked on a lock, read from the goroutine's state in runtime.Stack) for
// at least settle. Holding until the others are parked, rather than for a
// fixed time, makes the overlap certain on a slow machine and costs a
// correct store only a few milliseconds. A waiter parked for more than a
// millisecond also puts a sync.Mutex into its starvation mode, in which an
// unlocking goroutine hands the mutex to the first waiter: a store that
// unlocks between deciding and writing then lets that waiter read before it
// writes, every time.
//
// A hold never lasts more than maxHold once every member has entered the
// store, so a store that spins instead of parking (a spin lock, a retry
// loop) is only slowed down, never failed. A member that has not yet
// joined, or not yet entered the store, is only slow to start, as
// goroutines are on a loaded machine: a hold waits for it up to
// maxStartWait, so that the race stays pointed however late it starts.
type schedule struct {
	mu      sync.Mutex
	members map[int64]*member
	// sawClock: a member read a ManualClock, so the store runs in this
	// process and its members park only on each other.
	sawClock atomic.Bool
	// pending counts the members of later waves of a race that have not
	// joined yet: a hold waits for them as for members outside the store.
	pending atomic.Int32
}

const (
	// settle is how long the other members must stay quiet before a held
	// clock read returns: longer than sync.Mutex's 1 ms starvation threshold.
	settle = 2 * time.Millisecond
	// maxHold bounds one held clock read, once every member has entered
	// the store.
	maxHold = 250 * time.Millisecond
	// maxStartWait bounds how long a held clock read, or a case waiting
	// for members to settle, waits for members that have not started: not
	// joined the schedule, or not yet entered the store. Starting takes
	// microseconds on an idle machine, and only a loaded one comes near
	// it.
	maxStartWait = 10 * time.Second
	// pollEvery is how often a held clock read looks at the other members.
	// A look that reads every goroutine's state stops the world, so it is
	// not much more often than settle needs.
	pollEvery = time.Millisecond
	// maxLookEvery bounds the back-off of the reads of goroutine states
	// after reads that found a member running inside the store (see looks).
	maxLookEvery = 8 * time.Millisecond
)

// member is one goroutine taking part in a schedule.
type member struct {
	name    string
	id      atomic.Int64
	inStore atomic.Bool
	// entered: the member has called the store at least once.
	entered atomic.Bool
	inClock atomic.Bool
	done    atomic.Bool
	// pin, when set, holds the member's first clock read just after it has
	// sampled the clock, until the case releases it (see pinnedRace).
	pin *pin
	// free members' clock reads are never held: the schedule only watches
	// them.
	free bool
}

// pin holds one clock read after its sample: sampled is closed once the
// sample is taken, and the read returns it once release is closed.
type pin struct {
	sampled  chan struct{}
	release  chan struct{}
	used     bool // the first read was pinned; later ones pass (the member's goroutine only)
	released sync.Once
	// next, when set, pins the member's next clock read once this one is
	// released (pinnedRetryRace).
	next *pin
	// later counts the member's clock reads after the pinned one.
	later atomic.Int64
}

func newPin() *pin { return &pin{sampled: make(chan struct{}), release: make(chan struct{})} }

// free lets the pinned read return; it may be called more than once.
func (p *pin) free() { p.released.Do(func() { close(p.release) }) }

// racing finds the schedule of a goroutine that reads a ManualClock: the
// clock is the harness's, not the schedule's, so the member goroutines are
// registered process-wide, by goroutine id, while their race runs.
var racing struct {
	active  atomic.Int32 // schedules running; Now looks up nothing while 0
	mu      sync.Mutex
	members map[int64]*schedule
}

func newSchedule() *schedule {
	racing.active.Add(1)
	return &schedule{members: make(map[int64]*member)}
}

// end unregisters the schedule's members; their clock reads pass straight
// through from now on.
func (s *schedule) end() {
	s.mu.Lock()
	ids := make([]int64, 0, len(s.members))
	for id := range s.members {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	racing.mu.Lock()
	for _, id := range ids {
		delete(racing.members, id)
	}
	racing.mu.Unlock()
	racing.active.Add(-1)
}

// join registers the calling goroutine as a member named name. It must be
// called on the member's own goroutine, before its first admission.
func (s *schedule) join(name string) *member {
	return s.add(&member{name: name})
}

// add registers the calling goroutine as m, as join does.
func (s *schedule) add(m *member) *member {
	id := goid()
	m.id.Store(id)
	s.mu.Lock()
	s.members[id] = m
	s.mu.Unlock()
	racing.mu.Lock()
	if racing.members == nil {
		racing.members = make(map[int64]*schedule)
	}
	racing.members[id] = s
	racing.mu.Unlock()
	return m
}

// readIfRacing reads a ManualClock through read, holding the read when the
// calling goroutine, or the goroutine that started it, races in a
// schedule.
func readIfRacing(read func() time.Duration) time.Duration {
	id := goid()
	racing.mu.Lock()
	s := racing.members[id]
	racing.mu.Unlock()
	if s == nil {
		// A goroutine a member started reads for the member (spawned.go).
		id = creatorID()
		racing.mu.Lock()
		s = racing.members[id]
		racing.mu.Unlock()
	}
	if s == nil {
		return read()
	}
	return s.inClock(id, read)
}

// enter and leave bracket one call into the store. They, and finish, do
// nothing on a nil member: a race without a schedule.
func (m *member) enter() {
	if m != nil {
		m.entered.Store(true)
		m.inStore.Store(true)
	}
}

func (m *member) leave() {
	if m != nil {
		m.inStore.Store(false)
	}
}

// finish marks the member done: it will not call the store again.
func (m *member) finish() {
	if m != nil {
		m.done.Store(true)
	}
}

// inClock reads the clock for member id through read: a pinned first read
// samples, then waits for its release; any other read waits until the
// other members are quiet, then samples.
func (s *schedule) inClock(id int64, read func() time.Duration) time.Duration {
	s.mu.Lock()
	m := s.members[id]
	s.mu.Unlock()
	if m == nil {
		return read()
	}
	s.sawClock.Store(true)
	if m.free {
		return read()
	}
	m.inClock.Store(true)
	defer m.inClock.Store(false)
	if p := m.pin; p != nil && !p.used {
		p.used = true
		now := read()
		close(p.sampled)
		<-p.release
		if p.next != nil {
			m.pin = p.next
		}
		return now
	}
	if m.pin != nil {
		m.pin.later.Add(1)
	}
	s.hold(m)
	return read()
}

// hold waits until every member but m is quiet, for maxHold at most once
// every member has entered the store, and for maxStartWait at most.
func (s *schedule) hold(m *member) {
	start := time.Now()
	var quietSince time.Time
	var lk looks
	for {
		quiet, starting := s.othersQuiet(m, &lk)
		if waited := time.Since(start); waited >= maxStartWait || !starting && waited >= maxHold {
			return
		}
		wait := pollEvery
		if quiet {
			if quietSince.IsZero() {
				quietSince = time.Now()
			} else if time.Since(quietSince) >= settle {
				return
			}
			// The others are quiet: look again once they have been for
			// settle. Nothing but a goroutine outside the race can wake a
			// member parked while every other one is quiet, so a look in
			// between would only cost another stop of the world.
			wait = max(wait, settle-time.Since(quietSince))
		} else {
			quietSince = time.Time{}
		}
		time.Sleep(wait)
	}
}

// looks paces the reads of goroutine states of one waiting loop. The
// loop polls the members' flags every pollEvery, and reads the states
// (which stops the world) only when the flags cannot answer: when every
// member it waits for is inside the store. After a read that found one of
// them running, the next read waits twice as long as the last, up to
// maxLookEvery: a member running inside the store (a store that spins, or
// one still on its way to a lock) is only slower to be seen parked, and a
// hold, which returns after maxHold whatever it sees, is never shortened.
// A read that found them parked lets the next one come pollEvery later,
// so that staying parked for blockedFor is watched as finely as ever (a
// hold looks again once the others have been quiet for settle: see hold).
type looks struct {
	gap  time.Duration
	next time.Time
}

// due reports whether the loop may read the goroutine states now.
func (l *looks) due() bool { return l.dueAt(time.Now()) }

// dueAt reports whether the loop may read the goroutine states at now.
func (l *looks) dueAt(now time.Time) bool { return l == nil || l.next.IsZero() || !now.Before(l.next) }

// saw records the outcome of a read just made: whether a member was
// running.
func (l *looks) saw(running bool) { l.sawAt(time.Now(), running) }

// sawAt records the outcome of a read made at now.
func (l *looks) sawAt(now time.Time, running bool) {
	if l == nil {
		return
	}
	if !running {
		l.gap, l.next = 0, time.Time{}
		return
	}
	l.gap = min(max(2*l.gap, 2*pollEvery), maxLookEvery)
	l.next = now.Add(l.gap)
}

// othersQuiet reports whether every member but self is finished, inside
// the clock, or parked inside the store, and whether some member has not
// started: a member of a later wave has not joined yet, or a member has
// not yet entered the store. It reads the goroutine states only when the
// flags say every other member that is not finished nor inside the clock
// is inside the store, and lk says a read is due; otherwise it reports
// them not quiet.
func (s *schedule) othersQuiet(self *member, lk *looks) (quiet, starting bool) {
	if s.pending.Load() > 0 {
		return false, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.members {
		if m != self && !m.done.Load() && !m.inClock.Load() && !m.entered.Load() {
			return false, true
		}
	}
	var inStore []int64
	for id, m := range s.members {
		if m == self || m.done.Load() || m.inClock.Load() {
			continue
		}
		if !m.inStore.Load() {
			return false, false
		}
		inStore = append(inStore, id)
	}
	if len(inStore) == 0 {
		return true, false
	}
	if !lk.due() {
		return false, false
	}
	states := s.states()
	for _, id := range inStore {
		if !parked(states[id]) {
			lk.saw(true)
			return false, false
		}
	}
	lk.saw(false)
	return true, false
}

// stuck reports whether every unfinished member is parked inside the store
// and none is inside the clock: no member can make progress, since each
// waits for a lock that another holds.
func (s *schedule) stuck() (names []string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for id, m := range s.members {
		if m.done.Load() {
			continue
		}
		if m.inClock.Load() || !m.inStore.Load() {
			return nil, false
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, false
	}
	states := s.states()
	for _, id := range ids {
		if !parked(states[id]) || wakesByItself(states[id]) {
			return nil, false
		}
		names = append(names, s.members[id].name)
	}
	return names, true
}

// settled reports whether each of the named members is inside the clock,
// parked inside the store, or finished. Like othersQuiet, it reads the
// goroutine states only when the flags cannot answer and lk says a read
// is due, and reports false otherwise.
func (s *schedule) settled(lk *looks, ms ...*member) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var inStore []*member
	for _, m := range ms {
		if m.done.Load() || m.inClock.Load() {
			continue
		}
		if !m.inStore.Load() {
			return false
		}
		inStore = append(inStore, m)
	}
	if len(inStore) == 0 {
		return true
	}
	if !lk.due() {
		return false
	}
	states := s.states()
	for _, m := range inStore {
		if !parked(states[m.id.Load()]) {
			lk.saw(true)
			return false
		}
	}
	lk.saw(false)
	return true
}

// dump is the last reading of every goroutine's state, shared by every
// schedule: at is when it began, and a reading asked for before then is
// served by it, since it shows the states at a time after the ask. buf is
// runtime.Stack's buffer, kept at the largest size a dump has needed: a
// dump grows with the tests in flight, and one that does not fit is taken
// again.
var dump struct {
	mu     sync.Mutex
	at     time.Time
	states map[int64]string
	buf    []byte
}

// states returns the scheduling state of every goroutine, by id, as
// runtime.Stack prints it ("running", "sync.Mutex.Lock", "select", ...),
// read at some time after the call. The caller must not modify the map.
func (s *schedule) states() map[int64]string {
	asked := time.Now()
	dump.mu.Lock()
	defer dump.mu.Unlock()
	if dump.states != nil && !dump.at.Before(asked) {
		return dump.states
	}
	if dump.buf == nil {
		dump.buf = make([]byte, 256<<10)
	}
	dump.at = time.Now()
	for {
		n := runtime.Stack(dump.buf, true)
		if n < len(dump.buf) {
			dump.states = parseStates(dump.buf[:n])
			return dump.states
		}
		dump.buf = make([]byte, 2*len(dump.buf))
	}
}

// parseStates reads the header line of each goroutine in a runtime.Stack
// dump: "goroutine 19 [sync.Mutex.Lock, 2 minutes]:".
func parseStates(dump []byte) map[int64]string {
	states := make(map[int64]string)
	for line := range bytes.Lines(dump) {
		rest, ok := bytes.CutPrefix(line, []byte("goroutine "))
		if !ok {
			continue
		}
		num, rest, ok := bytes.Cut(rest, []byte(" "))
		if !ok {
			continue
		}
		id, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			continue
		}
		open := bytes.IndexByte(rest, '[')
		end := bytes.IndexAny(rest, ",]")
		if open < 0 || end < open {
			continue
		}
		states[id] = string(rest[open+1 : end])
	}
	return states
}

// parked reports whether a goroutine in state waits for something (a lock,
// a channel, a timer, the network) rather than running or being ready to.
func parked(state string) bool {
	switch state {
	case "", "running", "runnable", "syscall":
		return false
	}
	return true
}

// wakesByItself reports whether a goroutine parked in state waits for
// time to pass or for the network (time.Sleep, a read from a socket) rather
// than for another goroutine of the process: a store that pauses on a round
// trip while it holds its locks, which may take seconds on a loaded machine
// or a lossy network, is slow, not deadlocked.
func wakesByItself(state string) bool {
	return state == "sleep" || state == "IO wait"
}

// stuckWatch times how long a race has looked stuck, from looks taken at
// most maxLookGap apart: a process starved of CPU, whose watcher did not
// run for a while, saw nothing of what its members did meanwhile, so the
// stillness is timed again from the first look after the gap.
type stuckWatch struct {
	since, last time.Time
}

// maxLookGap is the longest gap between two looks that still counts as
// watching a race continuously.
const maxLookGap = 100 * time.Millisecond

// saw records a look taken now that found the race stuck or not, and
// reports whether it has been seen stuck for stuckFor.
func (w *stuckWatch) saw(stuck bool, now time.Time) bool {
	if !stuck {
		*w = stuckWatch{}
		return false
	}
	if w.since.IsZero() || now.Sub(w.last) > maxLookGap {
		w.since = now
	}
	w.last = now
	return now.Sub(w.since) >= stuckFor
}

// goid returns the calling goroutine's id, from the header of its stack.
func goid() int64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	b, _ := bytes.CutPrefix(buf[:n], []byte("goroutine "))
	num, _, _ := bytes.Cut(b, []byte(" "))
	id, _ := strconv.ParseInt(string(num), 10, 64)
	return id
}

// parkedInStore reports whether m waits inside the store, outside the
// clock: blocked on a lock another admission holds. It reads the goroutine
// states only when m is inside the store, outside the clock, and lk says
// a read is due, and reports false otherwise.
func (s *schedule) parkedInStore(lk *looks, m *member) bool {
	if !m.inStore.Load() || m.inClock.Load() || !lk.due() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := m.inStore.Load() && !m.inClock.Load() && parked(s.states()[m.id.Load()])
	lk.saw(!p)
	return p
}
