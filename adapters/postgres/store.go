package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/ports"
)

// Store is a replica-safe [ports.Store] on PostgreSQL: every replica whose
// store points at the same database shares one quota per counter, with the
// database's clock as the only time. It also implements [ports.Cleaner],
// [ports.StatsReporter], [ports.Closer], [ports.CheckAdmitter] and
// [ports.ReadinessChecker].
//
// A Store is safe for concurrent use. It borrows connections from a pool
// that its caller owns and never closes.
//
// A nil *Store or a zero Store, which [New] did not build, holds nothing
// and fails closed like a closed store: after reporting invalid input (a
// nil context included) as such, its operations return an error matching
// [ErrClosed] that consumed and removed nothing. They never panic.
//
// No printer shows the pool's config, which holds the database password,
// nor reads the store's changing state: under reflection they are an
// address.
type Store struct {
	cfg Config
	sql *statements
	// st is the *storeState held as an unsafe.Pointer. The pool and each
	// of its connections hold the connection config, password included,
	// and printers that walk values by reflection (fmt's bad-verb path,
	// spew in testify's diffs, which calls no method) print an
	// unsafe.Pointer as its address and never follow it; a plain pointer
	// field would be printed in full, and its atomics read racily while
	// the store serves. cfg and sql never change after New.
	st unsafe.Pointer
}

// storeState is what a [Store] holds that a printer must not see: the
// caller's pool, and the state that changes while the store serves.
type storeState struct {
	pool   *pgxpool.Pool
	closed atomic.Bool
	// warmingIdle is set while warmIdle runs.
	warmingIdle atomic.Bool
	// bg counts the goroutines Close waits for.
	bg         background
	admissions sync.Pool // *admission, the scratch memory of one Admit
}

var (
	_ ports.Store         = (*Store)(nil)
	_ ports.Cleaner       = (*Store)(nil)
	_ ports.StatsReporter = (*Store)(nil)
	_ ports.Closer        = (*Store)(nil)
	_ ports.CheckAdmitter = (*Store)(nil)
)

// nilPoolError is New's error for a nil pool. It matches [ErrInvalidConfig]
// and [ErrNilPool] with one "runlimit:" prefix, where wrapping one in the
// other would print two, and says where a pool comes from.
type nilPoolError struct{}

func (nilPoolError) Error() string {
	return "runlimit: invalid config: postgres store needs a pool (open one with pgxpool.New, and apply the schema with migrations.MigratePool)"
}

func (nilPoolError) Unwrap() []error { return []error{ErrInvalidConfig, ErrNilPool} }

// New returns a store over pool, whose schema must already be migrated (see
// [github.com/runlimit/runlimit/migrations]). It validates cfg and fills in
// its defaults; it does not touch the database. A nil pool is an error
// matching both [ErrNilPool] and [ErrInvalidConfig], the contract every
// constructor shares.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, nilPoolError{}
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	st := &storeState{pool: pool}
	st.bg.init()
	s := &Store{cfg: cfg, sql: newStatements(cfg.Schema), st: unsafe.Pointer(st)}
	st.admissions.New = func() any { return newAdmission(s) }
	return s, nil
}

// Config returns the store's configuration, defaults filled in.
func (s *Store) Config() Config {
	if s == nil {
		return Config{}
	}
	return s.cfg
}

// state returns the store's state, nil for a nil or zero Store.
func (s *Store) state() *storeState {
	if s == nil {
		return nil
	}
	return (*storeState)(s.st)
}

// conns returns the store's pool.
func (s *Store) conns() *pgxpool.Pool { return s.state().pool }

// unusable reports whether s is closed, or was never built by [New]: a nil
// or zero Store has no pool.
func (s *Store) unusable() bool {
	st := s.state()
	return st == nil || st.closed.Load()
}

// Close marks the store closed: later calls fail closed with [ErrClosed]
// without consuming quota. Calls in flight finish. It never closes the
// pool, which belongs to the caller.
//
// Close returns once no call of the store is in flight and no goroutine
// of it runs. It waits for calls in flight until they return, within
// their budgets (AcquireTimeout to get a connection, OperationTimeout,
// and another for the warm-up of a new connection): a call that found
// the store open as Close began, even one still waiting for a
// connection, neither takes one nor starts a goroutine after Close has
// returned. The work of a caller with a deadline runs on a goroutine of
// the store's: Close also waits for that of
// callers who left at their deadline, which rolls back and gives its
// connection back within the store's own small budgets (a few hundred
// milliseconds when the server answers; a warm-up of a new connection,
// which is never cut short, within OperationTimeout). The warm-up of idle
// connections stops after the connection in progress. So a host may
// close its pool, or look for leaked goroutines, as soon as Close has
// returned. Closing twice is harmless; a second Close waits as the first
// does. Do not call Close from code the store runs during one of its
// calls (a hook or tracer of the pool's connections): it would wait for
// the call that runs it.
func (s *Store) Close() error {
	if st := s.state(); st != nil {
		st.closed.Store(true)
		st.bg.close()
	}
	return nil
}

// String describes the store's configuration.
func (s *Store) String() string {
	if s == nil {
		return "postgres.Store(nil)"
	}
	return fmt.Sprintf("postgres.Store{Schema: %q, RowsPerShard: %d, MaxBatchSize: %d, AcquireTimeout: %v, OperationTimeout: %v}",
		s.cfg.Schema, s.cfg.RowsPerShard, s.cfg.MaxBatchSize, s.cfg.AcquireTimeout, s.cfg.OperationTimeout)
}

// acquire waits at most AcquireTimeout for a connection, or less if the
// caller's context ends sooner. A connection the pool opens meanwhile is
// kept for the next caller even if this one gives up.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, s.cfg.AcquireTimeout)
	defer cancel()
	conn, err := s.conns().Acquire(actx)
	if err != nil && ctx.Err() != nil {
		// The caller gave up; a connection opened for it arrives cold.
		s.startWarmIdle(true)
	}
	return conn, err
}
