package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgerror"
	"github.com/runlimit/runlimit/migrations"
	"github.com/runlimit/runlimit/ports"
)

// errClosed is returned by starting a Runtime that was closed.
var errClosed = errors.New("runlimit: runtime is closed")

// Runtime is a running Runlimit: the store a [Config] describes, the
// [Limiter] over it, the [domain.KeyHasher] built from the secret, an
// optional memory gate and the cleanup loop. [Open] returns one started;
// [Module] starts and stops it with an fx application.
//
// Close releases only what the Runtime opened: its stores, and a pool it
// opened from Config.DatabaseURL, never a pool the host gave it.
type Runtime struct {
	cfg     Config
	hasher  domain.KeyHasher
	limiter *Limiter
	gate    *Limiter

	// closers are the stores, closed in order by Close.
	closers  []ports.Closer
	cleaners []cleaner
	// pg is the PostgreSQL store, checked for readiness at start.
	pg *postgres.Store
	// pool is the store's pool; ownPool says the Runtime opened it.
	pool    *pgxpool.Pool
	ownPool bool

	// newTicker starts the cleanup loop's ticker: time.NewTicker, unless a
	// test drives the loop.
	newTicker func(time.Duration) (<-chan time.Time, func())

	mu      sync.Mutex
	started bool
	closed  bool
	loop    *cleanupLoop
}

// Open builds the Runtime cfg describes and starts it: it opens a pool from
// Config.DatabaseURL (or borrows Config.Pool), applies the schema when
// Config.Migrate is set, checks that the store answers and starts the cleanup
// loop. Call [Runtime.Close] when done. A bad config or secret is a
// [*ConfigError]; nothing stays open after an error.
func Open(ctx context.Context, cfg Config) (*Runtime, error) {
	r, err := newRuntime(cfg)
	if err != nil {
		return nil, err
	}
	if err := r.startOrClose(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// startOrClose starts r, and closes it if it cannot start.
func (r *Runtime) startOrClose(ctx context.Context) error {
	err := r.start(ctx)
	if err == nil {
		return nil
	}
	if cerr := r.Close(context.WithoutCancel(ctx)); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// newRuntime builds the stores and limiters without touching the network:
// a pool opened from a URL connects on first use. [Module] calls it from its
// constructor and leaves the I/O to start, in OnStart.
func newRuntime(cfg Config) (*Runtime, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	hasher, err := secretHasher(cfg.SecretEnv)
	if err != nil {
		return nil, err
	}
	r := &Runtime{cfg: cfg, hasher: hasher, newTicker: newTimeTicker}
	if err := r.build(); err != nil {
		// Release what was built so far, a pool opened from the URL above
		// all.
		if cerr := r.Close(context.Background()); cerr != nil {
			return nil, errors.Join(err, cerr)
		}
		return nil, err
	}
	return r, nil
}

// secretHasher builds the key hasher from the environment variable env. Its
// errors name the variable, never its value.
func secretHasher(env string) (domain.KeyHasher, error) {
	secret, ok := os.LookupEnv(env)
	if !ok || secret == "" {
		return domain.KeyHasher{}, &ConfigError{Field: "SecretEnv",
			Reason: "names environment variable " + env + ", which is not set"}
	}
	hasher, err := domain.NewKeyHasher([]byte(secret))
	if err != nil {
		// NewKeyHasher's only failure is a short secret; its text is not
		// passed on, in case a future one quotes more.
		return domain.KeyHasher{}, &ConfigError{Field: "SecretEnv",
			Reason: "names environment variable " + env + ", which holds fewer than " +
				strconv.Itoa(domain.MinSecretLength) + " bytes"}
	}
	return hasher, nil
}

func (r *Runtime) build() error {
	cfg := r.cfg
	if cfg.Gate != nil {
		gate, err := memory.New(*cfg.Gate)
		if err != nil {
			return storeConfigError("Gate", err)
		}
		r.closers = append(r.closers, gate)
		r.cleaners = append(r.cleaners, cleaner{name: "gate", Cleaner: gate})
		if r.gate, err = NewLimiter(gate, LimiterConfig{MaxBatchSize: cfg.Gate.MaxBatchSize, Observer: cfg.Observer, Name: "gate"}); err != nil {
			return err
		}
	}

	var (
		store    ports.Store
		maxBatch int
	)
	switch cfg.Backend {
	case BackendMemory:
		s, err := memory.New(cfg.Memory)
		if err != nil {
			return storeConfigError("Memory", err)
		}
		store, maxBatch = s, cfg.Memory.MaxBatchSize
		r.closers = append(r.closers, s)
		r.cleaners = append(r.cleaners, cleaner{name: "memory", Cleaner: s})
	case BackendPostgres:
		pool := cfg.Pool
		if pool == nil {
			pc, err := pgxpool.ParseConfig(cfg.DatabaseURL)
			if err != nil {
				// The parse error holds the URL as written, password
				// included: only its sanitized form is kept.
				return &ConfigError{Field: "DatabaseURL", Reason: "is not a valid PostgreSQL connection string", Err: pgerror.Sanitize(err)}
			}
			if pool, err = pgxpool.NewWithConfig(context.Background(), pc); err != nil {
				return &ConfigError{Field: "DatabaseURL", Reason: "cannot open a pool", Err: pgerror.Sanitize(err)}
			}
			r.ownPool = true
		}
		r.pool = pool
		s, err := postgres.New(pool, cfg.Postgres)
		if err != nil {
			return storeConfigError("Postgres", err)
		}
		store, maxBatch, r.pg = s, s.Config().MaxBatchSize, s
		r.closers = append(r.closers, s)
		r.cleaners = append(r.cleaners, cleaner{name: "postgres", Cleaner: s})
	}
	var err error
	r.limiter, err = NewLimiter(store, LimiterConfig{MaxBatchSize: maxBatch, Observer: cfg.Observer, Name: string(cfg.Backend)})
	return err
}

// storeConfigError names the Config field of a store's config error, such
// as "Memory.MaxKeys".
func storeConfigError(section string, err error) error {
	var me *memory.ConfigError
	if errors.As(err, &me) {
		return &ConfigError{Field: section + "." + me.Field, Reason: fmt.Sprintf("is %d, want %s", me.Value, me.Want), Err: err}
	}
	var pe *postgres.ConfigError
	if errors.As(err, &pe) {
		return &ConfigError{Field: section + "." + pe.Field, Reason: fmt.Sprintf("is %v, want %s", pe.Value, pe.Want), Err: err}
	}
	return &ConfigError{Field: section, Reason: "is rejected by its store", Err: err}
}

func newTimeTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// start applies the schema if asked, checks that the store answers and starts
// the cleanup loop. Starting twice is harmless.
func (r *Runtime) start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return errClosed
	case r.started:
		return nil
	}
	if r.pg != nil {
		if r.cfg.Migrate {
			if err := migrations.MigratePool(ctx, r.pool, r.pg.Config().Schema); err != nil {
				return fmt.Errorf("runlimit: migrate: %w", err)
			}
		}
		// Stats reads the capacity ledger: it proves the database answers
		// and the schema is there.
		if _, err := r.pg.Stats(ctx); err != nil {
			return fmt.Errorf("runlimit: the postgres store is not ready: %w", err)
		}
	}
	if r.cfg.CleanupInterval > 0 {
		ticks, stop := r.newTicker(r.cfg.CleanupInterval)
		r.loop = startCleanupLoop(ticks, stop, r.cleaners, r.cfg.CleanupBatch, r.cfg.CleanupErrorFunc)
	}
	r.started = true
	return nil
}

// Close stops the cleanup loop, waiting for a pass in progress until ctx is
// done, then closes the stores and the pool the Runtime opened from
// Config.DatabaseURL. A pool the host gave it stays open. Checks after Close
// fail closed without consuming quota. If ctx ends before the loop stops,
// nothing else is closed and Close may be called again; once it has
// succeeded, later calls return nil.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.loop != nil {
		if err := r.loop.stop(ctx); err != nil {
			return err
		}
		r.loop = nil
	}
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	for _, c := range r.closers {
		errs = append(errs, c.Close())
	}
	if r.ownPool {
		// Waits for connections in use to come back, as no loop or check
		// of this Runtime holds one any more (checks in flight finish).
		r.pool.Close()
	}
	return errors.Join(errs...)
}

// Limiter returns the limiter over the shared quota: the store
// Config.Backend selects.
func (r *Runtime) Limiter() *Limiter { return r.limiter }

// Gate returns the limiter over the memory gate, or nil when Config.Gate is
// not set.
//
// The gate is a separate store, not part of the shared quota's batches: check
// it first, with policies of its own (distinct policy ids, so its counters
// are never confused with the shared ones), and go on to [Runtime.Limiter]
// only when it permits the request. Its hard bound (Gate.MaxKeys) caps the
// memory and work that attacker-chosen subjects can cost before any
// database round trip; what it admitted stays consumed even if the shared
// quota then denies.
func (r *Runtime) Gate() *Limiter { return r.gate }

// KeyHasher returns the hasher built from the secret in Config.SecretEnv,
// for deriving the subject keys of checks.
func (r *Runtime) KeyHasher() domain.KeyHasher { return r.hasher }
