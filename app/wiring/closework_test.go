package wiring_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// holdLock has another session of db hold the advisory lock of c's
// counter, so that an admission of c waits for it with a connection, and
// returns what lets it go; calling that again does nothing.
func holdLock(t *testing.T, db *pgtest.Database, c domain.Check) (release func()) {
	t.Helper()
	ctx := context.Background()
	holder, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	var once sync.Once
	release = func() { once.Do(func() { _ = holder.Rollback(ctx) }) }
	_, err = holder.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", postgres.AdvisoryLockID(c.CounterKey()))
	if err != nil {
		release()
	}
	require.NoError(t, err)
	return release
}

// awaitLockWait returns once a session waits for an advisory lock in db
// (tests of other databases on the same server wait for theirs).
func awaitLockWait(t *testing.T, db *pgtest.Database) {
	t.Helper()
	for waiting := 0; waiting == 0; {
		require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_locks
			WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())`).Scan(&waiting))
		if waiting == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// TestCloseKeepsItsDeadlineWhileTheStoreFinishesWorkCallersLeft: the
// PostgreSQL store's Close waits for the work of callers who left at
// their deadline, which goes on, on a goroutine of the store's, to give
// its connection back. Close must not spend more than its context on
// that: it returns an error matching its context, and the store closes
// once the work is over. Here the work waits for a lock another session
// holds, and the store's cancel request for it cannot get through (a
// host's dialer held up), so it lasts until the test lets it go.
func TestCloseKeepsItsDeadlineWhileTheStoreFinishesWorkCallersLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A dialer that ignores its context: the cancel request's connection
	// waits for the test.
	db, r, pool, c, hd := openHeldDialRuntime(t, postgres.Config{OperationTimeout: postgres.MaxTimeout}, "auth.closework")
	hold, letGo := &hd.hold, hd.letGo
	defer letGo()

	// Another session holds the key's advisory lock, so the admission
	// waits with the pool's connection.
	release := holdLock(t, db, c)
	defer release()
	hold.Store(true)
	callerCtx, leave := context.WithTimeout(ctx, time.Hour)
	defer leave()
	checked := make(chan error, 1)
	go func() {
		_, err := r.Limiter().Check(callerCtx, c)
		checked <- err
	}()
	awaitLockWait(t, db)
	// The caller leaves; its work stays behind, waiting for the lock.
	leave()
	require.ErrorIs(t, <-checked, context.Canceled)

	closed := make(chan error, 1)
	go func() { closed <- r.Close(doneContext()) }()
	select {
	case err := <-closed:
		require.ErrorIs(t, err, context.Canceled, "Close says it did not wait for the store")
	case <-time.After(stuck):
		// Only a guard against hanging the run: a Close that keeps its
		// deadline returns at once.
		letGo()
		release()
		t.Fatal("Close waited for the work of a caller who left, past its context")
	}
	letGo()
	release()
	require.NoError(t, r.Close(ctx), "a later Close waits for the store")
	require.Zero(t, pool.Stat().AcquiredConns(), "the store's work gave its connection back")
}

// TestCloseKeepsItsDeadlineWhileACheckWaitsForANewConnection: the
// PostgreSQL store's Close also waits for a call that found the store
// open and is still waiting for a connection, which the pool may be
// opening for it. The Runtime closed the store on Close's own goroutine
// unless a connection of the pool was acquired, so a check waiting for a
// connection being opened (the pool's only one gone, the server slow to
// answer) held a Close whose context had ended for up to the store's
// AcquireTimeout. Close returns an error matching its context instead,
// and a later Close waits for the store.
func TestCloseKeepsItsDeadlineWhileACheckWaitsForANewConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A server slow to answer: the connection waits for the test.
	_, r, pool, c, hd := openHeldDialRuntime(t, postgres.Config{AcquireTimeout: postgres.MaxTimeout}, "auth.closeacquire")
	hold, dialing, letGo := &hd.hold, hd.dialing, hd.letGo
	defer letGo()

	// The pool's only connection goes; the next check waits for a new one.
	hold.Store(true)
	pool.Reset()
	checked := make(chan error, 1)
	go func() {
		_, err := r.Limiter().Check(ctx, c)
		checked <- err
	}()
	select {
	case <-dialing:
	case <-time.After(stuck):
		t.Fatal("the check never asked for a new connection")
	}
	require.Zero(t, pool.Stat().AcquiredConns())

	closed := make(chan error, 1)
	go func() { closed <- r.Close(doneContext()) }()
	select {
	case err := <-closed:
		require.ErrorIs(t, err, context.Canceled, "Close says it did not wait for the store")
	case <-time.After(stuck):
		// Only a guard against hanging the run: a Close that keeps its
		// deadline returns at once.
		letGo()
		t.Fatal("Close waited for a check waiting for a connection, past its context")
	}
	letGo()
	require.NoError(t, <-checked, "the check that found the store open is served")
	require.NoError(t, r.Close(ctx), "a later Close waits for the store")
	require.Zero(t, pool.Stat().AcquiredConns())
}

// heldDialer holds up the connections its pool dials once hold is set:
// each says so on dialing (if no one has yet) and waits until letGo.
type heldDialer struct {
	hold    atomic.Bool
	dialing chan struct{}
	letGo   func()
}

// openHeldDialRuntime opens a Runtime with the PostgreSQL store configured
// by cfg on a database of its own, through a borrowed pool of one
// connection whose dialer a heldDialer holds up, and admits one check of
// policy id (returned) to warm the connection. The pool and the Runtime's
// store close when the test ends; hd.letGo, which the test also calls,
// lets every held dial go.
func openHeldDialRuntime(t *testing.T, cfg postgres.Config, id string) (*pgtest.Database, *wiring.Runtime, *pgxpool.Pool, domain.Check, *heldDialer) {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	pc, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	pc.MaxConns = 1
	hd := &heldDialer{dialing: make(chan struct{}, 1)}
	let := make(chan struct{})
	var letOnce sync.Once
	hd.letGo = func() { letOnce.Do(func() { close(let) }) }
	t.Cleanup(hd.letGo)
	dial := pc.ConnConfig.DialFunc
	pc.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if hd.hold.Load() {
			select {
			case hd.dialing <- struct{}{}:
			default:
			}
			<-let
		}
		return dial(ctx, network, addr)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	cfg2 := wiring.Config{
		Backend: wiring.BackendPostgres, Pool: wiring.BorrowPool(pool), SecretEnv: setEnv(t, testSecret),
		Postgres: cfg, CleanupInterval: -1,
	}
	r, err := wiring.Open(ctx, cfg2)
	require.NoError(t, err)
	p := loginPolicy(t, id)
	c := domain.NewCheck(p, r.KeyHasher().KeyString(p, "alice@example.test"))
	_, err = r.Limiter().Check(ctx, c) // connects and warms up
	require.NoError(t, err)
	return db, r, pool, c, hd
}
