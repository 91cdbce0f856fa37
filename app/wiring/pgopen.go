package wiring

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgerror"
	"github.com/runlimit/runlimit/ports"
)

// pendingStore is the PostgreSQL store of a Runtime that opens its pool
// from Config.DatabaseURL: the limiter's store from New on, while the pool
// and the store over it are opened by Start. Opening a pool starts its
// health-check goroutine (and, with pool_min_conns, connections), which a
// constructor must not leave behind: fx runs no OnStop hook for a
// Runtime whose OnStart never ran, as when a hook before it fails or the
// start's context ends first, and nothing would ever close that pool.
//
// Before Start and after a Close that came first, every admission fails
// closed without consuming quota.
type pendingStore struct {
	store  atomic.Pointer[postgres.Store]
	closed atomic.Bool
}

var (
	_ ports.Store         = (*pendingStore)(nil)
	_ ports.CheckAdmitter = (*pendingStore)(nil)
)

// errStoreNotOpen is the error of an admission on a PostgreSQL store whose
// pool the Runtime has not opened yet.
var errStoreNotOpen error = &notOpenError{}

// notOpenError reports an admission before Start opened the store. It
// matches [ErrNotStarted], and consumed nothing.
type notOpenError struct{}

func (*notOpenError) Error() string {
	return "runlimit: the postgres store opens when the runtime starts: " + ErrNotStarted.Error()
}

func (*notOpenError) Unwrap() error { return ErrNotStarted }

// MayHaveConsumedQuota returns false: the store was never reached.
func (*notOpenError) MayHaveConsumedQuota() bool { return false }

// get returns the open store, or why there is none.
func (p *pendingStore) get() (*postgres.Store, error) {
	if s := p.store.Load(); s != nil {
		return s, nil
	}
	if p.closed.Load() {
		return nil, ports.ErrClosed
	}
	return nil, errStoreNotOpen
}

func (p *pendingStore) Admit(ctx context.Context, b *domain.Batch) error {
	s, err := p.get()
	if err != nil {
		return err
	}
	return s.Admit(ctx, b)
}

func (p *pendingStore) AdmitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	s, err := p.get()
	if err != nil {
		return domain.Decision{}, err
	}
	return s.AdmitCheck(ctx, c)
}

// close marks the store closed when it was never opened; an open one is
// closed by the Runtime as its own store.
func (p *pendingStore) close() { p.closed.Store(true) }

// checkPostgresConfig validates cfg as [postgres.New] does and returns it
// with its defaults, without a pool: the store built to check it is
// thrown away, and never reaches the pool it was given, which is never
// opened.
func checkPostgresConfig(cfg postgres.Config) (postgres.Config, error) {
	s, err := postgres.New(new(pgxpool.Pool), cfg)
	if err != nil {
		return cfg, err
	}
	return s.Config(), nil
}

// openPool opens the pool of pc and the PostgreSQL store over it, and
// signs the store up as the Runtime's own. It runs once, at the first
// Start, under r.mu.
func (r *runtimeState) openPool() error {
	pool, err := pgxpool.NewWithConfig(context.Background(), r.poolConfig)
	if err != nil {
		return &ConfigError{Field: "DatabaseURL", Reason: "cannot open a pool", Err: pgerror.Sanitize(err)}
	}
	s, err := postgres.New(pool, r.cfg.Postgres)
	if err != nil {
		// The config was checked by New: this is not expected.
		pool.Close()
		return storeConfigError("Postgres", err)
	}
	r.pool, r.ownPool, r.pg, r.poolConfig = pool, true, s, nil
	r.closers = append(r.closers, postgresCloser(s, pool))
	r.addStore("postgres", s)
	r.pending.store.Store(s)
	return nil
}
