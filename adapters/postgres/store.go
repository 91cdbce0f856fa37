package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/ports"
)

// Store is a replica-safe [ports.Store] on PostgreSQL: every replica whose
// store points at the same database shares one quota per counter, with the
// database's clock as the only time. It also implements [ports.Cleaner],
// [ports.StatsReporter], [ports.Closer] and [ports.CheckAdmitter].
//
// A Store is safe for concurrent use. It borrows connections from a pool
// that its caller owns and never closes.
type Store struct {
	pool       *pgxpool.Pool
	cfg        Config
	closed     atomic.Bool
	admissions sync.Pool // *admission, the scratch memory of one Admit
}

var (
	_ ports.Store         = (*Store)(nil)
	_ ports.Cleaner       = (*Store)(nil)
	_ ports.StatsReporter = (*Store)(nil)
	_ ports.Closer        = (*Store)(nil)
	_ ports.CheckAdmitter = (*Store)(nil)
)

// New returns a store over pool, whose schema must already be migrated (see
// [github.com/runlimit/runlimit/migrations]). It validates cfg and fills in
// its defaults; it does not touch the database.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, ErrNilPool
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool, cfg: cfg}
	s.admissions.New = func() any { return new(admission) }
	return s, nil
}

// Config returns the store's configuration, defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// Close marks the store closed: later calls fail closed with [ErrClosed]
// without consuming quota. Calls in flight finish. It never closes the
// pool, which belongs to the caller. Closing twice is harmless.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// String describes the store's configuration.
func (s *Store) String() string {
	return fmt.Sprintf("postgres.Store{RowsPerShard: %d, MaxBatchSize: %d, AcquireTimeout: %v, OperationTimeout: %v}",
		s.cfg.RowsPerShard, s.cfg.MaxBatchSize, s.cfg.AcquireTimeout, s.cfg.OperationTimeout)
}

// acquire waits at most AcquireTimeout for a connection, then opens the
// operation's own budget: a fresh OperationTimeout, or less if the caller's
// context ends sooner.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, context.Context, context.CancelFunc, error) {
	actx, cancel := context.WithTimeout(ctx, s.cfg.AcquireTimeout)
	conn, err := s.pool.Acquire(actx)
	cancel()
	if err != nil {
		return nil, nil, nil, err
	}
	opCtx, cancel := context.WithTimeout(ctx, s.cfg.OperationTimeout)
	return conn, opCtx, cancel, nil
}

// finish gives conn back to the pool once its transaction is over, rolling
// back one that is still open. It closes the connection instead when it
// cannot be trusted: the operation's context is done (the server may still
// be working through messages sent before the deadline or the caller's
// cancellation), the connection is broken or mid-message, or the rollback
// failed.
func finish(ctx context.Context, conn *pgxpool.Conn) {
	pc := conn.Conn().PgConn()
	switch {
	case ctx.Err() != nil || pc.IsClosed() || pc.IsBusy():
		discard(conn)
	case pc.TxStatus() == 'I':
		conn.Release()
	default:
		if _, err := conn.Exec(ctx, sqlRollback); err != nil {
			discard(conn)
			return
		}
		conn.Release()
	}
}

// discard takes conn out of the pool and closes it. The server rolls back
// whatever transaction the connection had open.
func discard(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	_ = conn.Hijack().Close(ctx)
}

// serverTimeout is appendServerTimeout as a string.
func serverTimeout(ctx context.Context) string {
	return string(appendServerTimeout(ctx, nil))
}

const (
	sqlBegin    = "BEGIN ISOLATION LEVEL READ COMMITTED"
	sqlCommit   = "COMMIT"
	sqlRollback = "ROLLBACK"
	// sqlTimeouts bounds every statement, lock wait and idle gap of a
	// cleanup transaction by the operation's budget (admissions set the
	// same in sqlLock).
	sqlTimeouts = `SELECT pg_catalog.set_config('statement_timeout', $1, true),
       pg_catalog.set_config('lock_timeout', $1, true),
       pg_catalog.set_config('idle_in_transaction_session_timeout', $1, true)`
)
