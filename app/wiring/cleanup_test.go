package wiring_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/ports"
)

// cleanupCall is one CleanupExpired call of a fakeCleaner, waiting for the
// test's reply.
type cleanupCall struct {
	ctx   context.Context
	max   int
	reply chan cleanupReply
}

type cleanupReply struct {
	n   int
	err error
}

// fakeCleaner hands every CleanupExpired call to the test on calls and
// returns what the test replies, however long that takes. It records how many calls were ever in
// progress at once.
type fakeCleaner struct {
	calls       chan cleanupCall
	inFlight    atomic.Int32
	maxInFlight atomic.Int32
}

var _ ports.Cleaner = (*fakeCleaner)(nil)

func newFakeCleaner() *fakeCleaner { return &fakeCleaner{calls: make(chan cleanupCall)} }

func (f *fakeCleaner) CleanupExpired(ctx context.Context, max int) (int, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxInFlight.Load()
		if n <= m || f.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	c := cleanupCall{ctx: ctx, max: max, reply: make(chan cleanupReply)}
	select {
	case f.calls <- c:
	case <-ctx.Done():
		// Nobody took the call (a failed test); let the loop stop.
		return 0, ctx.Err()
	}
	// Once taken, the call runs until the test replies, cancelled or not.
	r := <-c.reply
	return r.n, r.err
}

// stuck bounds the waits of these tests, so that a loop that never makes
// an expected call fails the test instead of hanging it. Passing tests never
// wait for it.
const stuck = 10 * time.Second

// tick sends a tick to a loop, which takes it only between passes.
func tick(t *testing.T, ticks chan<- time.Time) {
	t.Helper()
	select {
	case ticks <- time.Time{}:
	case <-time.After(stuck):
		t.Fatalf("the cleanup loop took no tick within %v", stuck)
	}
}

// answer receives the next call of f, requires its batch size and replies.
func answer(t *testing.T, f *fakeCleaner, wantMax, n int, err error) {
	t.Helper()
	var c cleanupCall
	select {
	case c = <-f.calls:
	case <-time.After(stuck):
		t.Fatalf("no cleanup call within %v", stuck)
	}
	require.Equal(t, wantMax, c.max)
	c.reply <- cleanupReply{n: n, err: err}
}

// loopSetup starts a loop over two fake cleaners with batch 10; errors go to
// errs. The loop is stopped when the test ends, if the test has not.
type loopSetup struct {
	ticks      chan time.Time
	first      *fakeCleaner
	second     *fakeCleaner
	errs       chan error
	stop       func(context.Context) error
	tickerDone <-chan struct{}
}

func setupLoop(t *testing.T) *loopSetup {
	t.Helper()
	s := &loopSetup{
		ticks:  make(chan time.Time),
		first:  newFakeCleaner(),
		second: newFakeCleaner(),
		errs:   make(chan error, 16),
	}
	s.stop, s.tickerDone = wiring.StartCleanupLoop(s.ticks, 10, func(err error) { s.errs <- err }, s.first, s.second)
	t.Cleanup(func() { _ = s.stop(context.Background()) })
	return s
}

func TestCleanupLoopRunsAPassPerTick(t *testing.T) {
	t.Parallel()
	s := setupLoop(t)

	for range 2 {
		// The unbuffered tick is received only by a loop waiting between
		// passes.
		tick(t, s.ticks)
		// A full batch means more may be waiting: the pass calls again
		// until a call removes less, then moves on to the next store.
		answer(t, s.first, 10, 10, nil)
		answer(t, s.first, 10, 10, nil)
		answer(t, s.first, 10, 3, nil)
		answer(t, s.second, 10, 0, nil)
	}
	tick(t, s.ticks)
	answer(t, s.first, 10, 9, nil)
	answer(t, s.second, 10, 10, nil)
	answer(t, s.second, 10, 1, nil)

	require.NoError(t, s.stop(context.Background()))
	require.Empty(t, s.errs)
	require.Equal(t, int32(1), s.first.maxInFlight.Load())
	require.Equal(t, int32(1), s.second.maxInFlight.Load())
}

func TestCleanupLoopNeverOverlapsItself(t *testing.T) {
	t.Parallel()
	ticks := make(chan time.Time, 2)
	f := newFakeCleaner()
	stop, _ := wiring.StartCleanupLoop(ticks, 5, nil, f)
	t.Cleanup(func() { _ = stop(context.Background()) })

	// Two ticks are waiting before the first pass starts: a loop that
	// started a pass per tick would have two calls in progress at once.
	ticks <- time.Time{}
	ticks <- time.Time{}
	answer(t, f, 5, 0, nil)
	answer(t, f, 5, 0, nil)
	require.NoError(t, stop(context.Background()))
	require.Equal(t, int32(1), f.maxInFlight.Load())
}

func TestCleanupLoopReportsErrorsAndCarriesOn(t *testing.T) {
	t.Parallel()
	s := setupLoop(t)
	boom := errors.New("backend down")

	tick(t, s.ticks)
	// A failed call ends that store's pass; the other store still runs.
	answer(t, s.first, 10, 0, boom)
	answer(t, s.second, 10, 0, nil)

	err := <-s.errs
	var ce *wiring.CleanupError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "c0", ce.Store)
	require.ErrorIs(t, err, boom)
	require.Equal(t, "runlimit: cleanup of the c0 store: backend down", err.Error())

	// The next tick runs a full pass again.
	tick(t, s.ticks)
	answer(t, s.first, 10, 0, nil)
	answer(t, s.second, 10, 0, nil)
	require.NoError(t, s.stop(context.Background()))
	require.Empty(t, s.errs)
}

func TestCleanupLoopStopCancelsAndWaitsForThePass(t *testing.T) {
	t.Parallel()
	s := setupLoop(t)

	tick(t, s.ticks)
	call := <-s.first.calls
	stopped := make(chan error, 1)
	go func() { stopped <- s.stop(context.Background()) }()

	// Stop cancels the pass in progress...
	<-call.ctx.Done()
	// ...and does not return while the call is still running.
	select {
	case err := <-stopped:
		t.Fatalf("stop returned (%v) before the cleanup call did", err)
	default:
	}
	call.reply <- cleanupReply{err: call.ctx.Err()}

	require.NoError(t, <-stopped)
	<-s.tickerDone
	// The cancellation ends the loop; it is not a cleanup failure, and
	// the second store is not called.
	require.Empty(t, s.errs)
	require.Zero(t, s.second.inFlight.Load())
}

func TestCleanupLoopStopIsBoundedByItsContext(t *testing.T) {
	t.Parallel()
	s := setupLoop(t)

	tick(t, s.ticks)
	call := <-s.first.calls
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The call ignores cancellation: stop gives up when its context ends.
	err := s.stop(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "cleanup loop did not stop")

	call.reply <- cleanupReply{n: 10}
	require.NoError(t, s.stop(context.Background()))
	<-s.tickerDone
}

func TestCleanupLoopStopsBeforeAnyTick(t *testing.T) {
	t.Parallel()
	s := setupLoop(t)
	require.NoError(t, s.stop(context.Background()))
	<-s.tickerDone
	require.Zero(t, s.first.maxInFlight.Load())
	// Stopping again is harmless.
	require.NoError(t, s.stop(context.Background()))
}
