package conformance

import (
	"sync"
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
	for !s.settled(m) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.True(t, s.settled(m), "a member blocked on a mutex inside the store is settled")
	names, stuck := s.stuck()
	require.True(t, stuck, "a lone member parked in the store, outside the clock, is stuck")
	require.Equal(t, []string{"waiter"}, names)
	mu.Unlock()
	<-done
	require.True(t, waited)
	require.True(t, s.settled(m), "a finished member is settled")
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
