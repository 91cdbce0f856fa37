package wiring

import (
	"context"
	"regexp"
	"strings"
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
	r.closers = append(r.closers, closer{name: "postgres", Closer: s})
	r.addStore("postgres", s)
	r.pending.store.Store(s)
	return nil
}

// misplacedAt reports a URL-form connection string with an "@" after its
// authority, in its host list, in the path or in a query parameter's
// name, or whose user information, as pgx reads it, swallowed a "?". Such
// a string parses, but not as its author meant. A password holding an
// unencoded "@", as in postgres://app:pa@ss@db/app, ends the user
// information at its first "@", so that the rest of the password becomes
// a host name, which the resolver's error prints. A password holding "/"
// or "?" (unencoded) after a run of digits, as in
// postgres://app:5433/pa55word@db/app, ends the authority early, so that
// the rest of the password becomes the database name, or a parameter's
// name, which the driver's and the server's connection errors print. An
// "@" in a parameter's value, as in ?user=name@server, is left alone when
// a path comes before the query and no "/" follows the "@" in the value.
// A "#" starts no fragment: pgx parses URLs as libpq does, for which it is
// an ordinary character of the database name or a parameter.
func misplacedAt(dsn string) bool {
	var rest string
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		if len(dsn) >= len(scheme) && strings.EqualFold(dsn[:len(scheme)], scheme) {
			rest = dsn[len(scheme):]
			break
		}
	}
	// pgx, as libpq, ends the user information at the first "@" that
	// comes before any "/", even one inside a password or what was meant
	// as the query, and reads hosts and ports from there to the next "/"
	// or "?". A password holding an unencoded "@" then leaves its rest in
	// the host, and a query read as user information (postgres://h?user=
	// a@b&password=...) leaves its parameters there or in the user name,
	// which the resolver's and the driver's connection errors print.
	hosts := rest
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		if strings.Contains(rest[:i], "?") {
			return true
		}
		hosts = rest[i+1:]
	}
	if i := strings.IndexAny(hosts, "/?"); i >= 0 {
		hosts = hosts[:i]
	}
	if strings.ContainsAny(hosts, "@&=") {
		return true
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		return false
	}
	path, query, _ := strings.Cut(rest[end:], "?")
	if strings.Contains(path, "@") {
		return true
	}
	for _, param := range strings.Split(query, "&") {
		name, value, _ := strings.Cut(param, "=")
		if strings.Contains(name, "@") {
			return true
		}
		// A value that goes on after its "@" to a "/", as the host and
		// database a password was meant to precede do
		// (postgres://app:5433/pa55?word=x@db/app), is no user@server.
		if _, after, ok := strings.Cut(value, "@"); ok && strings.Contains(after, "/") {
			return true
		}
	}
	return false
}

// passwordPair matches a setting's value that is a keyword/value
// connection string's password pair.
var passwordPair = regexp.MustCompile(`(?i)^\s*password\s*=`)

// swallowedPassword reports a parsed connection string in which a setting
// took the password pair as its value. In keyword/value form, as libpq
// reads it, a value left empty takes the next word: "user= password=pw"
// (a template whose variable was unset) sets the user name to
// "password=pw", and the driver's connection error names the user, the
// database and the host, as the server's does the role and the database.
func swallowedPassword(pc *pgxpool.Config) bool {
	cc := pc.ConnConfig
	values := []string{cc.User, cc.Database, cc.Host}
	for _, fb := range cc.Fallbacks {
		values = append(values, fb.Host)
	}
	for _, v := range cc.RuntimeParams {
		values = append(values, v)
	}
	for _, v := range values {
		if passwordPair.MatchString(v) {
			return true
		}
	}
	return false
}
