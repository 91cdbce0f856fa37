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
	require.True(t, s.settled(nil, m), "a member parked inside the store (on a channel, here) is settled")
	require.NotEqual(t, before, read(), "whether a member inside the store is parked needs the goroutine states read")
	close(release)
	<-done
}

// TestLooksBackOffAfterARunningMember: after a read that found a member
// running inside the store, the next read waits twice as long as the last
// one did, up to maxLookEvery; a read that found the members parked lets
// the next one come at once.
func TestLooksBackOffAfterARunningMember(t *testing.T) {
	t.Parallel()
	var lk looks
	require.True(t, lk.due(), "the first read is due at once")
	for _, gap := range []time.Duration{2 * pollEvery, 4 * pollEvery, maxLookEvery, maxLookEvery} {
		lk.saw(true)
		require.Equal(t, gap, lk.gap)
		require.False(t, lk.due(), "a read right after one that found a member running")
		require.WithinDuration(t, time.Now().Add(gap), lk.next, gap)
	}
	lk.saw(false)
	require.True(t, lk.due(), "a read right after one that found the members parked")
	var none *looks
	require.True(t, none.due(), "without pacing every read is due")
}
