package conformance

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestScheduleSeesParkedAndRunningMembers guards the schedule's reading of
// goroutine states from runtime.Stack: if its format changed, held clock
// reads would only time out, and the races would stop being forced.
func TestScheduleSeesParkedAndRunningMembers(t *testing.T) {
	t.Parallel()
	s := newSchedule()
	defer s.end()
	var mu sync.Mutex
	mu.Lock()
	joined := make(chan *member)
	done := make(chan struct{})
	waited := false
	go func() {
		m := s.join("waiter")
		m.enter()
		joined <- m
		mu.Lock() // parks until the test unlocks
		waited = true
		mu.Unlock()
		m.leave()
		m.finish()
		close(done)
	}()
	m := <-joined
	deadline := time.Now().Add(10 * time.Second)
	for !s.settled(nil, m) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.True(t, s.settled(nil, m), "a member blocked on a mutex inside the store is settled")
	names, stuck := s.stuck()
	require.True(t, stuck, "a lone member parked in the store, outside the clock, is stuck")
	require.Equal(t, []string{"waiter"}, names)
	mu.Unlock()
	<-done
	require.True(t, waited)
	require.True(t, s.settled(nil, m), "a finished member is settled")
	_, stuck = s.stuck()
	require.False(t, stuck, "no member is left waiting")
}

func TestParseStatesReadsEveryHeader(t *testing.T) {
	t.Parallel()
	dump := []byte("goroutine 1 [running]:\nmain.main()\n\ngoroutine 19 [sync.Mutex.Lock, 2 minutes]:\nsync.runtime_SemacquireMutex()\n\ngoroutine 20 [chan receive]:\n")
	require.Equal(t, map[int64]string{1: "running", 19: "sync.Mutex.Lock", 20: "chan receive"}, parseStates(dump))
	require.False(t, parked("running"))
	require.False(t, parked("runnable"))
	require.True(t, parked("sync.Mutex.Lock"))
	require.True(t, parked("select"))
}

// TestHoldWaitsForMembersYetToStart: a held clock read waits for a member
// that has not started, one of a later wave that has not joined the
// schedule yet or one that has joined but not yet called the store,
// however long it takes to start (on a loaded machine, far longer than
// settle). A hold that returned once the members it could see were quiet
// released the lock holders of a crossed-batches race before the batches
// they should have blocked had started, and a store that locks partitions
// in its keys' order escaped the suite in about one run in fifteen under
// load.
func TestHoldWaitsForMembersYetToStart(t *testing.T) {
	t.Parallel()
	for _, late := range []string{"not joined", "not entered"} {
		t.Run(late, func(t *testing.T) {
			t.Parallel()
			s := newSchedule()
			defer s.end()
			if late == "not joined" {
				s.pending.Add(1)
			}
			var started atomic.Bool
			holding := make(chan *member)
			returned := make(chan bool, 1)
			go func() {
				m := s.join("holder")
				m.enter()
				holding <- m
				s.inClock(m.id.Load(), func() time.Duration { return 0 })
				returned <- started.Load()
				m.leave()
				m.finish()
			}()
			release := make(chan struct{})
			begin := make(chan struct{})
			lateDone := make(chan struct{})
			go func() {
				defer close(lateDone)
				var m *member
				if late == "not entered" {
					m = s.join("late")
				}
				<-begin
				if late == "not joined" {
					m = s.join("late")
					s.pending.Add(-1)
				}
				started.Store(true)
				m.enter()
				<-release // parks inside the store until the test releases it
				m.leave()
				m.finish()
			}()
			holder := <-holding
			for !holder.inClock.Load() {
				time.Sleep(time.Millisecond)
			}
			// Long enough for a hold that ignores the late member to
			// return (it needs settle), or that gives it no more than
			// maxHold, and well short of maxStartWait.
			time.Sleep(maxHold + 25*settle)
			close(begin)
			require.True(t, <-returned, "the held clock read returned before the late member started")
			close(release)
			<-lateDone
		})
	}
}

// TestStuckWatchTimesOnlyWhatItSaw: a race looks stuck for stuckFor only
// when looks no further apart than maxLookGap saw it so all along. A
// watcher starved of CPU for a second, whose two looks on either side of
// the gap each found the racers parked (in a store's round trips, say),
// saw nothing in between, and called a slow store deadlocked.
func TestStuckWatchTimesOnlyWhatItSaw(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	var w stuckWatch
	require.False(t, w.saw(true, t0))
	require.False(t, w.saw(true, t0.Add(stuckFor+maxLookGap)), "two looks a gap apart are not a second of watching")
	var at time.Time
	for at = t0.Add(stuckFor + maxLookGap); at.Before(t0.Add(2*stuckFor + maxLookGap)); at = at.Add(maxLookGap / 2) {
		require.False(t, w.saw(true, at))
	}
	require.True(t, w.saw(true, at), "looks close together that all found the race stuck for stuckFor")
	require.False(t, w.saw(false, at.Add(time.Millisecond)))
	require.False(t, w.saw(true, at.Add(2*time.Millisecond)), "a look that found it moving starts the count again")
}

// TestSleepingMemberIsNotStuck: a member parked in time.Sleep inside the
// store (a store pausing for a round trip while it holds its locks) waits
// for time, not for another member, so the race is not deadlocked.
func TestSleepingMemberIsNotStuck(t *testing.T) {
	t.Parallel()
	s := newSchedule()
	defer s.end()
	joined := make(chan *member)
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		m := s.join("sleeper")
		m.enter()
		joined <- m
		for {
			select {
			case <-release:
				m.leave()
				m.finish()
				return
			default:
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	m := <-joined
	deadline := time.Now().Add(10 * time.Second)
	for !s.settled(nil, m) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.True(t, s.settled(nil, m), "a sleeping member is parked, as a hold needs")
	_, stuck := s.stuck()
	require.False(t, stuck, "a sleeping member will wake by itself")
	require.True(t, wakesByItself("sleep"))
	require.True(t, wakesByItself("IO wait"))
	require.False(t, wakesByItself("sync.Mutex.Lock"))
	close(release)
	<-done
}
