package wiring_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/testkit"
	"github.com/runlimit/runlimit/ports"
)

// panicCloseStore is a host's store whose Close panics with a value that
// holds something no printer may show.
type panicCloseStore struct{ *fakeStore }

const closePanicValue = "close panicked holding tok-9f3e1c"

func (panicCloseStore) Close() error { panic(closePanicValue) }

// blockCloseStore is a host's store whose Close blocks until released,
// then fails with err.
type blockCloseStore struct {
	*fakeStore
	entered chan struct{}
	release chan struct{}
	err     error
}

func (s blockCloseStore) Close() error {
	close(s.entered)
	<-s.release
	return s.err
}

// storeRuntime opens a Runtime over the host's store s, which NewStoreFunc
// returns, so that the Runtime owns it and closes it, with a gate in
// front and its log in logs.
func storeRuntime(t *testing.T, s ports.Store, logs *testkit.LogBuffer) *wiring.Runtime {
	t.Helper()
	r, err := wiring.Open(context.Background(), wiring.Config{
		Backend:      wiring.BackendStore,
		NewStoreFunc: func(context.Context) (ports.Store, error) { return s, nil },
		Gate:         &memory.Config{MaxKeys: 10},
		SecretEnv:    setEnv(t, testSecret), CleanupInterval: -1,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	require.NoError(t, err)
	return r
}

// TestCloseSurvivesAPanickingStoreClose: a host store whose Close panicked
// made Runtime.Close panic, and with it the host's shutdown (fx runs
// OnStop hooks without recovering). The panic is now an error naming the
// store, never the panic's value, and the Runtime is closed all the same.
func TestCloseSurvivesAPanickingStoreClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs testkit.LogBuffer
	r := storeRuntime(t, panicCloseStore{newFakeStore(t)}, &logs)

	var err error
	require.NotPanics(t, func() { err = r.Close(ctx) })
	require.Error(t, err)
	require.Contains(t, err.Error(), `closing store "store" panicked with a value of type string`)
	require.NotContains(t, err.Error(), "tok-9f3e1c")
	require.NotContains(t, logs.String(), "tok-9f3e1c")
	require.Contains(t, logs.String(), "runlimit: stopped")
	require.ErrorIs(t, r.Ready(ctx), wiring.ErrClosed)
	// The gate, closed before the host's store, refuses checks.
	p := domain.MustPolicy("gate.api", "client", 1, time.Minute)
	_, err = r.Gate().Check(ctx, domain.NewCheck(p, r.KeyHasher().KeyString(p, "192.0.2.1")))
	require.ErrorIs(t, err, ports.ErrClosed)
	require.NoError(t, r.Close(ctx), "a second Close has nothing left to report")
}

// TestCloseReturnsWhenAStoreCloseBlocks: a host store whose Close blocked
// held Runtime.Close past its context's end, and a host's shutdown (fx's
// stop timeout) with it, for as long as the store liked. Close now returns
// the context's error once it ends; the store goes on closing, and a later
// Close waits for it and reports its error once.
func TestCloseReturnsWhenAStoreCloseBlocks(t *testing.T) {
	t.Parallel()
	var logs testkit.LogBuffer
	storeErr := errors.New("flush failed")
	s := blockCloseStore{fakeStore: newFakeStore(t), entered: make(chan struct{}), release: make(chan struct{}), err: storeErr}
	r := storeRuntime(t, s, &logs)
	defer func() {
		select {
		case <-s.release:
		default:
			close(s.release) // the test failed before it released the store
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Close(ctx) }()
	<-s.entered
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		// Only a guard against hanging the run: Close returns as soon as
		// it sees the cancellation.
		t.Fatal("Close did not return once its context was cancelled")
	}
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, r.Ready(context.Background()), wiring.ErrClosed)
	require.Contains(t, logs.String(), "Close did not wait for it to finish")

	close(s.release)
	require.ErrorIs(t, r.Close(context.Background()), storeErr, "the later Close waits for the store and reports its error")
	require.NoError(t, r.Close(context.Background()))
}

// blockCleanStore is a host's store whose CleanupExpired ignores its
// context and blocks until released, and whose Close says it ran.
type blockCleanStore struct {
	*fakeStore
	entered chan struct{}
	release chan struct{}
	closed  chan struct{}
}

func (s blockCleanStore) CleanupExpired(context.Context, int) (int, error) {
	s.entered <- struct{}{}
	<-s.release
	return 0, nil
}

func (s blockCleanStore) Close() error {
	close(s.closed)
	return nil
}

// TestCloseDuringAPassStillClosesTheStores: a Close whose context ended
// while a cleanup pass was running returned "the cleanup loop did not
// stop" and closed nothing: unless the host called Close again (fx never
// does), the stores, and a pool opened from a URL, stayed open for good.
// The stores now close as soon as the cancelled pass returns, without
// another Close.
func TestCloseDuringAPassStillClosesTheStores(t *testing.T) {
	t.Parallel()
	var logs testkit.LogBuffer
	s := blockCleanStore{fakeStore: newFakeStore(t), entered: make(chan struct{}, 1),
		release: make(chan struct{}), closed: make(chan struct{})}
	ticks := make(chan time.Time)
	r, err := wiring.OpenWithTicks(context.Background(), wiring.Config{
		Backend:      wiring.BackendStore,
		NewStoreFunc: func(context.Context) (ports.Store, error) { return s, nil },
		Gate:         &memory.Config{MaxKeys: 10},
		SecretEnv:    setEnv(t, testSecret),
		Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
	}, ticks)
	require.NoError(t, err)
	released := false
	defer func() {
		if !released {
			close(s.release)
		}
	}()

	ticks <- time.Now()
	<-s.entered // the gate's pass is done; the store's is running
	err = r.Close(doneContext())
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "the cleanup loop did not stop")

	close(s.release)
	released = true
	select {
	case <-s.closed:
	case <-time.After(30 * time.Second):
		// Only a guard against hanging the run: the store closes as soon
		// as its pass returns.
		t.Fatal("the store was not closed once its pass returned")
	}
	ctx := context.Background()
	p := domain.MustPolicy("gate.api", "client", 1, time.Minute)
	_, err = r.Gate().Check(ctx, domain.NewCheck(p, r.KeyHasher().KeyString(p, "192.0.2.1")))
	require.ErrorIs(t, err, ports.ErrClosed, "the gate was closed too")
	require.NoError(t, r.Close(ctx))
	require.Contains(t, logs.String(), "runlimit: stopped")
}
