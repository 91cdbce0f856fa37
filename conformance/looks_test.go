package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFlagsAnswerWithoutReadingStates: when the members' flags settle the
// question (a member outside the store, or every member inside the clock
// or finished), the schedule answers without reading every goroutine's
// state, which stops the world; it reads them only when a member it
// waits for is inside the store.
func TestFlagsAnswerWithoutReadingStates(t *testing.T) {
	// Not parallel: it watches the process-wide dump.
	s := newSchedule()
	defer s.end()
	joined := make(chan *member)
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		m := s.join("member")
		joined <- m
		<-release
	}()
	m := <-joined
	other := &member{name: "other"}
	s.mu.Lock()
	s.members[-1] = other
	s.mu.Unlock()
	read := func() time.Time {
		dump.mu.Lock()
		defer dump.mu.Unlock()
		return dump.at
	}
	before := read()

	require.False(t, s.settled(nil, m), "a member that has not called the store is not settled")
	require.False(t, s.parkedInStore(nil, m), "a member outside the store is not parked inside it")
	_, stuck := s.stuck()
	require.False(t, stuck, "members outside the store are not stuck")
	quiet, starting := s.othersQuiet(other, nil)
	require.False(t, quiet, "a member that has not called the store is not quiet")
	require.True(t, starting, "a member that has not called the store is starting")
	m.entered.Store(true)
	quiet, starting = s.othersQuiet(other, nil)
	require.False(t, quiet, "a member outside the store is not quiet")
	require.False(t, starting, "a member that has called the store has started")
	m.inClock.Store(true)
	require.True(t, s.settled(nil, m), "a member inside the clock is settled")
	quiet, _ = s.othersQuiet(other, nil)
	require.True(t, quiet, "a member inside the clock is quiet")
	m.inClock.Store(false)
	m.done.Store(true)
	require.True(t, s.settled(nil, m), "a finished member is settled")
	require.Equal(t, before, read(), "the flags answered every question, yet the goroutine states were read")

	m.done.Store(false)
	m.inStore.Store(true)
	// The member handed itself over before it reached its receive: on a
	// loaded machine it may still be running, or waiting for a processor,
	// when the states are first read. It parks there before long, and stays.
	deadline := time.Now().Add(10 * time.Second)
	for !s.settled(nil, m) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.True(t, s.settled(nil, m), "a member parked inside the store (on a channel, here) is settled")
	require.NotEqual(t, before, read(), "whether a member inside the store is parked needs the goroutine states read")
	close(release)
	<-done
}

// TestLooksBackOffAfterARunningMember: after a read that found a member
// running inside the store, the next read waits twice as long as the last
// one did, up to maxLookEvery; a read that found the members parked lets
// the next one come at once. It reads the pacing at given instants: a test
// that read the clock between a read and its check failed whenever the
// machine stalled it for a gap.
func TestLooksBackOffAfterARunningMember(t *testing.T) {
	t.Parallel()
	var lk looks
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.True(t, lk.dueAt(at), "the first read is due at once")
	for _, gap := range []time.Duration{2 * pollEvery, 4 * pollEvery, maxLookEvery, maxLookEvery} {
		lk.sawAt(at, true)
		require.Equal(t, gap, lk.gap)
		require.Equal(t, at.Add(gap), lk.next)
		require.False(t, lk.dueAt(at), "a read right after one that found a member running")
		require.False(t, lk.dueAt(at.Add(gap-time.Nanosecond)), "a read before the gap has passed")
		require.True(t, lk.dueAt(at.Add(gap)), "a read once the gap has passed")
		at = at.Add(gap)
	}
	lk.sawAt(at, false)
	require.True(t, lk.dueAt(at), "a read right after one that found the members parked")
	var none *looks
	require.True(t, none.dueAt(at), "without pacing every read is due")
	require.True(t, none.due(), "without pacing every read is due")
	none.saw(true) // a nil looks records nothing, and does not panic
}
