package wiring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/connstring"
	"github.com/runlimit/runlimit/internal/pgerror"
	"github.com/runlimit/runlimit/migrations"
	"github.com/runlimit/runlimit/ports"
)

// Runtime is a running Runlimit: the store a [Config] describes, the
// [app.Limiter] over it, the [domain.KeyHasher] built from the secret, an
// optional memory gate and the cleanup loop. [Open] returns one started;
// [New] one to start with [Runtime.Start]; the runlimitfx module starts and
// stops it with an fx application.
//
// Close releases only what the Runtime opened: its stores, a pool it opened
// from Config.DatabaseURL and a store from Config.NewStoreFunc, never a
// pool or a store the host gave it.
//
// A Runtime prints as an address under every printer: it holds the key
// hasher, the config and the pool, whose config holds the database
// password.
//
// A nil *Runtime or a zero Runtime, which New or Open did not build, holds
// nothing and never panics: Start and Ready return [ErrNotBuilt], Close
// returns nil, Limiter and Gate return nil (a nil *app.Limiter fails every
// check with [ports.ErrNotBuilt]), KeyHasher the zero hasher and
// StatsFuncs an empty map.
type Runtime struct {
	// st is the *runtimeState held as an unsafe.Pointer, which printers
	// that walk values by reflection (fmt's bad-verb path, spew in
	// testify's diffs) print as an address and never follow; a plain
	// pointer field would be printed in full.
	st unsafe.Pointer
}

// state returns r's state, or nil for a nil or zero Runtime.
func (r *Runtime) state() *runtimeState {
	if r == nil {
		return nil
	}
	return (*runtimeState)(r.st)
}

// runtimeState is everything a [Runtime] holds.
type runtimeState struct {
	cfg     Config
	hasher  domain.KeyHasher
	limiter *app.Limiter
	gate    *app.Limiter

	// closers are the stores the Runtime owns, closed in order by Close.
	closers  []closer
	cleaners []cleaner
	// reporters are the stores that can prove themselves ready.
	reporters []reporter
	// poison watches the stores that report poisoned shards.
	poison []*poisonWatch
	// pg is the PostgreSQL store, whose schema start applies when asked.
	pg *postgres.Store
	// pool is the store's pool; ownPool says the Runtime opened it.
	pool    *pgxpool.Pool
	ownPool bool
	// poolConfig is the config of the pool the first Start opens from
	// Config.DatabaseURL, for the store pending stands for; nil once
	// opened, and without a URL.
	poolConfig *pgxpool.Config
	pending    *pendingStore

	// newTicker starts the cleanup loop's ticker: time.NewTicker, unless a
	// test drives the loop.
	newTicker func(time.Duration) (<-chan time.Time, func())

	// mu is the lock of the fields below: a buffered channel of one,
	// held while it holds a value, so that Close can stop waiting for it
	// when its context ends (a Start holds it through its I/O).
	mu      chan struct{}
	started bool
	closed  bool
	loop    *cleanupLoop
	// closing is closed when the stores and the pool have been closed,
	// which Close waits for until its context ends.
	closing chan struct{}
	// loopDone is closed when the cleanup loop has ended, when Close found
	// it running a pass.
	loopDone <-chan struct{}
	// closeErr is the stores' error, set before closing is closed;
	// reported says a Close has returned it.
	closeErr error
	reported bool
	// phase mirrors started and closed for Ready, which must not wait for
	// mu while Close waits for the cleanup loop.
	phase atomic.Int32

	// cancelStart cancels the context of the Start in progress, if any,
	// with the cause ErrClosed. It has a lock of its own, as the Start
	// holds mu, which Close must not wait for to reach it.
	startMu     sync.Mutex
	cancelStart context.CancelCauseFunc

	// readyFlight is the readiness check in progress, if any, which
	// concurrent probes share (see sharedReady); readyMu guards it.
	readyMu     sync.Mutex
	readyFlight *readyFlight
}

// lock takes mu, or gives up and reports false once ctx is done.
func (r *runtimeState) lock(ctx context.Context) bool {
	select {
	case r.mu <- struct{}{}:
		return true
	default:
	}
	select {
	case r.mu <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *runtimeState) unlock() { <-r.mu }

// Phases of a Runtime, in runtimeState.phase.
const (
	phaseNew int32 = iota
	phaseStarted
	phaseClosed
)

// Open builds the Runtime cfg describes and starts it: it opens a pool from
// Config.DatabaseURL (or borrows Config.Pool), applies the schema when
// Config.Migrate is set, checks that the store answers and starts the cleanup
// loop. Call [Runtime.Close] when done. A bad config or secret is a
// [*ConfigError]; nothing stays open after an error. A nil ctx is
// [ports.ErrNilContext], before anything is built.
func Open(ctx context.Context, cfg Config) (*Runtime, error) {
	r, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := r.Start(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Start opens the pool of Config.DatabaseURL (a pool the host lent is
// already open), applies the schema when Config.Migrate is set, checks
// that the store answers and starts the cleanup loop. Starting twice is harmless. If
// it cannot start, it closes the Runtime, since a host that saw the start
// fail has no reason to call Close (fx runs no OnStop for a hook whose
// OnStart failed). A Close called meanwhile cancels it, and it fails with
// [ErrClosed]. A nil ctx is [ports.ErrNilContext], returned before any
// work and leaving the Runtime as it was; a nil or zero Runtime is
// [ErrNotBuilt].
func (r *Runtime) Start(ctx context.Context) error {
	st := r.state()
	switch {
	case ctx == nil:
		return ports.ErrNilContext
	case st == nil:
		return ErrNotBuilt
	}
	return st.startOrClose(ctx)
}

// startOrClose starts r, and closes it if it cannot start.
func (r *runtimeState) startOrClose(ctx context.Context) error {
	err := r.start(ctx)
	if err == nil {
		return nil
	}
	if cerr := r.Close(context.WithoutCancel(ctx)); cerr != nil {
		err = errors.Join(err, cerr)
	}
	r.logger().LogAttrs(ctx, slog.LevelError, "runlimit: start failed; the runtime is closed",
		slog.String("backend", string(r.cfg.Backend)), slog.String("error", err.Error()))
	return err
}

// New builds the Runtime cfg describes without starting it, and without
// touching the network or starting a goroutine: the pool of
// Config.DatabaseURL is opened by [Runtime.Start], and until then the
// limiter's checks fail closed with an error matching [ErrNotStarted],
// having consumed nothing. Start does the I/O; the fx module calls New
// from its constructor and Start from OnStart, so that an application
// whose start fails before that hook runs (fx then runs no OnStop for it)
// leaves no pool behind. A bad config or secret is a
// [*ConfigError]; nothing stays open after an error. A nil ctx is
// [ports.ErrNilContext], before anything is built.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if ctx == nil {
		return nil, ports.ErrNilContext
	}
	chosen := cfg.Backend == ""
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	hasher, err := keyHasher(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r := &runtimeState{cfg: cfg, hasher: hasher, newTicker: newTimeTicker, mu: make(chan struct{}, 1)}
	if err := r.build(ctx); err != nil {
		explainChosenMemory(err, chosen, cfg)
		// Release what was built so far, a pool opened from the URL above
		// all.
		if cerr := r.Close(context.Background()); cerr != nil {
			return nil, errors.Join(err, cerr)
		}
		return nil, err
	}
	return &Runtime{st: unsafe.Pointer(r)}, nil
}

func (r *runtimeState) build(ctx context.Context) error {
	cfg := r.cfg
	if cfg.Gate != nil {
		gate, err := memory.New(*cfg.Gate)
		if err != nil {
			return storeConfigError("Gate", err)
		}
		r.closers = append(r.closers, closer{name: "gate", Closer: gate})
		r.addStore("gate", gate)
		if r.gate, err = app.NewLimiter(gate, app.LimiterConfig{MaxBatchSize: cfg.Gate.MaxBatchSize, Observer: cfg.Observer, Name: "gate", Logger: cfg.Logger}); err != nil {
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
		r.closers = append(r.closers, closer{name: "memory", Closer: s})
		r.addStore("memory", s)
	case BackendPostgres:
		pool := cfg.Pool.Get()
		if pool == nil {
			pc, err := pgxpool.ParseConfig(cfg.DatabaseURL.Reveal())
			if err != nil {
				// The parse error holds the URL as written, password
				// included: only its sanitized form is kept.
				return &ConfigError{Field: "DatabaseURL", Reason: "is not a valid PostgreSQL connection string: want postgres://USER:PASS@HOST:5432/DBNAME, or keyword/value pairs such as host=HOST dbname=DBNAME", Err: pgerror.Sanitize(err)}
			}
			if connstring.Misplaced(cfg.DatabaseURL.Reveal()) {
				return &ConfigError{Field: "DatabaseURL", Reason: `holds an "@" in or after its host, or a "?" before it, where a connection error would print what follows: ` +
					`percent-encode an "@", "/", "?" or "#" in the password (%40, %2F, %3F, %23) and an "@" in a user or database name (%40)`}
			}
			if connstring.SwallowedPassword(&pc.ConnConfig.Config) {
				return &ConfigError{Field: "DatabaseURL", Reason: `has a setting left empty before its password ("user= password=..."), which takes the password pair as its value, ` +
					`where a connection error would print it: write an empty value as '' or leave the setting out`}
			}
			// The pool serves the store alone, whose statements name their
			// objects in full: its search_path is pinned (a startup
			// parameter, which overrides the role's and the database's), so
			// one that searched another schema before pg_catalog, which the
			// store refuses, cannot stop it.
			pc.ConnConfig.RuntimeParams["search_path"] = "pg_catalog, pg_temp"
			// The pool, and the store over it, are opened by Start (see
			// pendingStore); the store's config is checked now.
			pgCfg, err := checkPostgresConfig(cfg.Postgres)
			if err != nil {
				return storeConfigError("Postgres", err)
			}
			r.poolConfig, r.pending = pc, &pendingStore{}
			store, maxBatch = r.pending, pgCfg.MaxBatchSize
			break
		}
		r.pool = pool
		s, err := postgres.New(pool, cfg.Postgres)
		if err != nil {
			return storeConfigError("Postgres", err)
		}
		store, maxBatch, r.pg = s, s.Config().MaxBatchSize, s
		r.closers = append(r.closers, postgresCloser(s, pool))
		// Stats reads the capacity ledger: it proves the database answers
		// and the schema is there.
		r.addStore("postgres", s)
	case BackendStore:
		s, err := r.hostStore(ctx)
		if err != nil {
			return err
		}
		store = s
	}
	var err error
	r.limiter, err = app.NewLimiter(store, app.LimiterConfig{MaxBatchSize: maxBatch, Observer: cfg.Observer, Name: string(cfg.Backend), Logger: cfg.Logger})
	return err
}

// explainChosenMemory adds to err, a [*ConfigError] about the size of an
// unsized memory store, the variable that sizes it (a host configured by
// [ConfigFromEnv] sets the secret and, on its first run, often nothing
// else) and, when the config did not name that backend, how it was chosen:
// a config with Backend empty and no other backend's fields set gets the
// memory backend, and a host that meant another (whose database URL came
// from an unset variable, say) would otherwise read only that
// Memory.MaxKeys is 0.
func explainChosenMemory(err error, chosen bool, cfg Config) {
	var ce *ConfigError
	if cfg.Backend != BackendMemory || cfg.Memory.MaxKeys != 0 || !errors.As(err, &ce) || ce.Field != "Memory.MaxKeys" {
		return
	}
	if chosen {
		ce.Reason += " (Backend is empty and none of DatabaseURL, Pool, Store and NewStoreFunc is set, so the memory backend was chosen;" +
			" from the environment, size it with " + EnvMemoryMaxKeys + ", which has no default, or set " + EnvDatabaseURL + " for PostgreSQL)"
		return
	}
	ce.Reason += " (from the environment: " + EnvMemoryMaxKeys + ", which has no default)"
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

// start applies the schema if asked, checks that the stores answer and
// starts the cleanup loop. Starting twice is harmless.
func (r *runtimeState) start(ctx context.Context) error {
	r.mu <- struct{}{}
	defer r.unlock()
	switch {
	case r.closed:
		return ErrClosed
	case r.started:
		return nil
	}
	// A Close that begins now cancels the migration and the readiness
	// check, which may wait on a table lock for as long as ctx allows, and
	// this Start fails with ErrClosed. One that began before the cancel
	// function was set has set the phase.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.startMu.Lock()
	r.cancelStart = cancel
	r.startMu.Unlock()
	defer func() {
		r.startMu.Lock()
		r.cancelStart = nil
		r.startMu.Unlock()
	}()
	if r.phase.Load() == phaseClosed {
		return ErrClosed
	}
	err := r.startLocked(ctx)
	if err != nil && errors.Is(context.Cause(ctx), ErrClosed) {
		return fmt.Errorf("%w while it was starting: %w", ErrClosed, err)
	}
	return err
}

// startLocked is start's work, under mu.
func (r *runtimeState) startLocked(ctx context.Context) error {
	if r.poolConfig != nil {
		if err := r.openPool(); err != nil {
			return err
		}
	}
	if r.pg != nil && r.cfg.Migrate {
		began := time.Now()
		if err := r.migrate(ctx); err != nil {
			return &MigrateError{Schema: r.pg.Config().Schema, Err: err}
		}
		r.logger().LogAttrs(ctx, slog.LevelInfo, "runlimit: schema migrated",
			slog.String("backend", string(r.cfg.Backend)), slog.Duration("duration", time.Since(began)))
	}
	if err := r.storesReady(ctx); err != nil {
		return err
	}
	if r.cfg.CleanupInterval > 0 {
		ticks, stop := r.newTicker(r.cfg.CleanupInterval)
		r.loop = startCleanupLoop(ticks, stop, cleanupRun{
			cleaners: r.cleaners, batch: r.cfg.CleanupBatch, onError: r.cfg.CleanupErrorFunc,
			observers: cleanupObserverList(r.cfg.CleanupObserver), logger: r.logger,
		})
	}
	r.started = true
	// A Close waiting for mu has marked the Runtime closed already.
	r.phase.CompareAndSwap(phaseNew, phaseStarted)
	attrs := []slog.Attr{
		slog.String("backend", string(r.cfg.Backend)),
		slog.Bool("gate", r.gate != nil),
		slog.Bool("migrate", r.cfg.Migrate),
		slog.Duration("cleanup_interval", max(r.cfg.CleanupInterval, 0)),
	}
	if r.cfg.Backend == BackendPostgres {
		attrs = append(attrs, slog.String("postgres_protocol", r.cfg.Postgres.Protocol.String()))
	}
	for _, o := range cleanupObserverList(r.cfg.CleanupObserver) {
		if sr, ok := o.(StartReporter); ok {
			attrs = append(attrs, sr.StartAttrs()...)
		}
	}
	r.logger().LogAttrs(ctx, slog.LevelInfo, "runlimit: started", attrs...)
	return nil
}

// migrate applies the schema on a connection of its own with the pool's
// settings. Its connect is bounded by the store's AcquireTimeout when the
// connection string sets no connect_timeout, as the pool's connections
// are by the store: a server that accepts and never answers (a hung
// host) would otherwise hold a Start whose context has no deadline for
// ever, where one without migration fails after that budget.
func (r *runtimeState) migrate(ctx context.Context) error {
	cc := r.pool.Config().ConnConfig
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = r.pg.Config().AcquireTimeout
	}
	return migrations.Migrate(ctx, cc, r.pg.Config().Schema)
}

// logger returns Config.Logger, or the default logger of the moment.
func (r *runtimeState) logger() *slog.Logger {
	if r.cfg.Logger != nil {
		return r.cfg.Logger
	}
	return slog.Default()
}

// Close cancels a Start in progress, which then fails with [ErrClosed],
// stops the cleanup loop, cancelling a pass in progress, then closes the
// stores and the pool the Runtime opened from Config.DatabaseURL. A
// pool the host gave it stays open. Checks after Close fail closed without
// consuming quota, except on a host store from Config.Store, which stays
// open and answers until its owner closes it: stop using the Runtime's
// limiters once it is closed.
//
// ctx bounds only how long Close waits: the shutdown goes on to its end
// either way. A loop between passes stops at once, so a ctx that is done
// already (a shutdown deadline that serving requests used up) still
// closes everything before Close returns. If ctx ends while a cancelled
// pass is still running, while a host's store from Config.NewStoreFunc
// is closing (its Close may block), while the PostgreSQL store waits for
// its checks in flight, one waiting for a connection included, or for the
// work of callers who left at their deadline (see
// [postgres.Store.Close]), or while checks in flight hold connections of
// the pool opened from Config.DatabaseURL, Close returns an error
// matching ctx's; the stores close once the pass or the store's Close
// returns, the pool once those checks finish, and a
// later Close waits for them again. So does a ctx that ends while a
// cancelled Start, or another Close, is still letting go. A store whose Close panics is an
// error naming the store, and the others are closed all the same. Once
// Close has returned the stores' result, later calls return nil. A nil
// ctx waits without a deadline, as context.Background does; a nil or zero
// Runtime has nothing to close and returns nil.
func (r *Runtime) Close(ctx context.Context) error {
	st := r.state()
	if st == nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	return st.Close(ctx)
}

// Close is [Runtime.Close].
func (r *runtimeState) Close(ctx context.Context) error {
	// Not ready from the moment Close is called: a probe sees a stopping
	// Runtime as it will be.
	r.phase.Store(phaseClosed)
	r.startMu.Lock()
	if r.cancelStart != nil {
		r.cancelStart(ErrClosed)
	}
	r.startMu.Unlock()
	if !r.lock(ctx) {
		// A Start, cancelled above, or another Close still holds mu. The
		// shutdown goes on once it lets go, as it does when ctx ends while
		// the stores close.
		go func() {
			r.mu <- struct{}{}
			defer r.unlock()
			r.beginClose()
		}()
		return fmt.Errorf("runlimit: the runtime is still starting or closing: %w", ctx.Err())
	}
	defer r.unlock()
	r.beginClose()
	if err := r.waitClosed(ctx); err != nil {
		r.logger().LogAttrs(ctx, slog.LevelWarn, "runlimit: stopping; Close did not wait for it to finish",
			slog.String("backend", string(r.cfg.Backend)), slog.String("error", err.Error()))
		return err
	}
	if r.reported {
		return nil
	}
	r.reported = true
	err := r.closeErr
	if r.started {
		attrs := []slog.Attr{slog.String("backend", string(r.cfg.Backend))}
		level := slog.LevelInfo
		if err != nil {
			// Stopped all the same, but something the Runtime owned did
			// not close cleanly: an operator should see it.
			level = slog.LevelWarn
			attrs = append(attrs, slog.String("error", err.Error()))
		}
		r.logger().LogAttrs(ctx, level, "runlimit: stopped", attrs...)
	}
	return err
}

// beginClose marks r closed, stops the cleanup loop and closes the stores,
// once the loop's pass in progress, if any, has ended. It runs under mu;
// only the first call does anything.
func (r *runtimeState) beginClose() {
	if r.closed {
		return
	}
	r.closed = true
	r.closing = make(chan struct{})
	if r.pending != nil {
		// A pool never opened stays so: admissions say the store is
		// closed.
		r.pending.close()
	}
	loop := r.loop
	r.loop = nil
	if loop == nil || loop.stopIdle() {
		r.closeStores()
		return
	}
	// A pass is in progress, cancelled: the stores close once it has
	// ended, whether or not ctx lets Close wait that long, so that a
	// Close whose context ends first leaves nothing open.
	r.loopDone = loop.done
	go func() {
		<-loop.done
		r.closeStores()
	}()
}

// waitClosed waits until the stores are closed or ctx ends, and then
// says what Close did not wait for: the cleanup loop's pass, or the
// stores.
func (r *runtimeState) waitClosed(ctx context.Context) error {
	select {
	case <-r.closing:
		return nil
	default:
	}
	select {
	case <-r.closing:
		return nil
	case <-ctx.Done():
	}
	if r.loopDone != nil {
		select {
		case <-r.loopDone:
		default:
			return fmt.Errorf("runlimit: the cleanup loop did not stop: %w", ctx.Err())
		}
	}
	return fmt.Errorf("runlimit: the stores did not close: %w", ctx.Err())
}

// closer is a store the Runtime opened, by its name; host says it is the
// host's, from Config.NewStoreFunc. busy, when set, says whether the
// store's Close would wait now: the PostgreSQL store's waits for its
// calls in flight and the work of callers who left at their deadline,
// which hold connections of its pool or wait for one the pool is
// opening.
type closer struct {
	name string
	ports.Closer
	host bool
	busy func() bool
}

// postgresCloser is the closer of the PostgreSQL store s over pool. The
// pool is busy while a connection is acquired or being opened: a call
// waiting for a new connection holds none yet, and the store's Close
// waits for it up to the store's AcquireTimeout. A call caught between
// finding the store open and asking the pool is not seen; it asks within
// microseconds.
func postgresCloser(s *postgres.Store, pool *pgxpool.Pool) closer {
	return closer{name: "postgres", Closer: s, busy: func() bool {
		st := pool.Stat()
		return st.AcquiredConns() > 0 || st.ConstructingConns() > 0
	}}
}

// mayWait reports whether c's Close may block: a host's store, whose Close
// is the host's, or a store that says it is busy.
func (c closer) mayWait() bool { return c.host || c.busy != nil && c.busy() }

// closeStores closes every store the Runtime opened, in order, then the
// pool it opened, and closes r.closing once all are closed. A host's store
// from Config.NewStoreFunc closes on a goroutine of its own, which Close
// waits for only until its context ends: fx's stop timeout, or a host's
// shutdown deadline, must not be spent waiting on a Close that blocks. So
// does the PostgreSQL store while its pool has connections in use or
// being opened: its Close waits for the calls in flight, one waiting for
// a connection included, and for the work of callers who left at their
// deadline, which rolls back within the store's own budgets.
// The Runtime's own stores close before it returns when idle, and so does
// its pool when no check holds a connection; a pool in use closes on a
// goroutine of its own once the checks in flight let go of it. A store whose Close panics is
// reported as an error, and the others are still closed.
func (r *runtimeState) closeStores() {
	var errs []error
	finish := func() {
		r.closeErr = errors.Join(errs...)
		if !r.ownPool {
			close(r.closing)
			return
		}
		// The pool's Close waits for the connections in use to come back:
		// checks in flight finish, each within its store budget (up to
		// two minutes at the largest settings). Close must not spend its
		// context on them, so a pool in use closes on a goroutine of its
		// own; an idle one, the common case, closes before Close returns,
		// even under a context that is done already.
		if r.pool.Stat().AcquiredConns() > 0 {
			go func() {
				r.pool.Close()
				close(r.closing)
			}()
			return
		}
		r.pool.Close()
		close(r.closing)
	}
	for i, c := range r.closers {
		if c.mayWait() {
			rest := r.closers[i:]
			go func() {
				defer finish()
				for _, c := range rest {
					errs = append(errs, c.close())
				}
			}()
			return
		}
		errs = append(errs, c.close())
	}
	finish()
}

func (c closer) close() (err error) {
	defer func() {
		if v := recover(); v != nil {
			// The value is not printed: it is the host's, and may hold
			// anything.
			err = fmt.Errorf("runlimit: closing store %q panicked with a value of type %T", c.name, v)
		}
	}()
	return c.Close()
}

// Limiter returns the limiter over the shared quota: the store
// Config.Backend selects.
func (r *Runtime) Limiter() *app.Limiter {
	if st := r.state(); st != nil {
		return st.limiter
	}
	return nil
}

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
func (r *Runtime) Gate() *app.Limiter {
	if st := r.state(); st != nil {
		return st.gate
	}
	return nil
}

// KeyHasher returns the hasher built from the key secret, for deriving the
// subject keys of checks.
func (r *Runtime) KeyHasher() domain.KeyHasher {
	if st := r.state(); st != nil {
		return st.hasher
	}
	return domain.KeyHasher{}
}
