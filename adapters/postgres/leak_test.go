package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// The store's errors, from the server and from the driver, print no key
// bytes and no password through any printer, alone or nested in a host's
// struct: here a server error whose message, detail and hint spell the
// subject key in hex, on the admission and the cleanup paths, and a
// connection error for a URL holding a password.
func TestErrorsHoldNoSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, postgres.Config{})
	p := policy(t, "leak", 5, time.Hour)
	const subject = "leak-subject@example.test"
	c := f.check(p, subject)
	key := c.CounterKey().Bytes()
	secrets := [][]byte{key[:32], key[32:], []byte(subject)}

	_, err := f.db.Pool.Exec(ctx, `
		CREATE FUNCTION test_spell_key() RETURNS trigger LANGUAGE plpgsql AS $$
		DECLARE k text;
		BEGIN
			SELECT encode(o.subject_key, 'hex') INTO k FROM runlimit_spelled AS o LIMIT 1;
			RAISE EXCEPTION 'duplicate key %', k
				USING ERRCODE = 'unique_violation', DETAIL = 'Key (subject_key)=(\x' || k || ') already exists.',
				      HINT = k, CONSTRAINT = 'runlimit_fixed_windows_pkey';
		END $$;
		CREATE TRIGGER zz_test_insert AFTER INSERT ON runlimit_fixed_windows
			REFERENCING NEW TABLE AS runlimit_spelled
			FOR EACH STATEMENT EXECUTE FUNCTION test_spell_key();`)
	require.NoError(t, err)
	for _, batch := range [][]domain.Check{{c}, {c, f.check(p, "other")}} {
		_, err = tryAdmit(ctx, f.store, batch...)
		requireAdmissionError(t, err, postgres.OpWrite, false)
		var dbErr *postgres.DatabaseError
		require.ErrorAs(t, err, &dbErr)
		require.Equal(t, "23505", dbErr.Code)
		require.Equal(t, "runlimit_fixed_windows_pkey", dbErr.ConstraintName)
		requireNoDriverError(t, err)
		leakcheck.Check(t, "admission error", err, secrets...)
	}
	_, err = f.store.AdmitCheck(ctx, c)
	requireAdmissionError(t, err, postgres.OpWrite, false)
	requireNoDriverError(t, err)
	leakcheck.Check(t, "single-check error", err, secrets...)

	// Cleanup: the same on delete.
	_, err = f.db.Pool.Exec(ctx, `DROP TRIGGER zz_test_insert ON runlimit_fixed_windows;
		CREATE TRIGGER zz_test_delete AFTER DELETE ON runlimit_fixed_windows
			REFERENCING OLD TABLE AS runlimit_spelled
			FOR EACH STATEMENT EXECUTE FUNCTION test_spell_key();`)
	require.NoError(t, err)
	requireAllowed(t, admit(t, f.store, c))
	shift(t, f.db.Pool, 2*time.Hour)
	_, err = f.store.CleanupExpired(ctx, 10)
	var me *postgres.MaintenanceError
	require.ErrorAs(t, err, &me)
	requireNoDriverError(t, err)
	leakcheck.Check(t, "cleanup error", err, secrets...)

	// A pool whose URL holds a password, on a server that is not there.
	const password = "S3cr3t-pa55w0rd"
	cfg, err := pgxpool.ParseConfig("postgres://runlimit:" + url.QueryEscape(password) + "@127.0.0.1:1/x?sslmode=disable&connect_timeout=5")
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := postgres.New(pool, postgres.Config{AcquireTimeout: 5 * time.Second})
	require.NoError(t, err)
	_, err = store.AdmitCheck(ctx, c)
	requireAdmissionError(t, err, postgres.OpAcquire, false)
	requireNoDriverError(t, err)
	leakcheck.Check(t, "connection error", err, []byte(password))
	_, err = store.CleanupExpired(ctx, 10)
	require.ErrorAs(t, err, &me)
	requireNoDriverError(t, err)
	leakcheck.Check(t, "connection error of cleanup", err, []byte(password))
	_, err = store.TableStats(ctx)
	require.ErrorAs(t, err, &me)
	requireNoDriverError(t, err)
	leakcheck.Check(t, "connection error of stats", err, []byte(password))
}

// requireNoDriverError requires that err holds none of the driver's errors
// that carry secrets: a server error (its detail), a connection error (its
// config) or a parse error (the connection string).
func requireNoDriverError(t *testing.T, err error) {
	t.Helper()
	var pgErr *pgconn.PgError
	var connectErr *pgconn.ConnectError
	var parseErr *pgconn.ParseConfigError
	require.False(t, errors.As(err, &pgErr), "a *pgconn.PgError is kept")
	require.False(t, errors.As(err, &connectErr), "a *pgconn.ConnectError is kept")
	require.False(t, errors.As(err, &parseErr), "a *pgconn.ParseConfigError is kept")
}

// A store prints no password through any printer, alone or nested in a
// host's struct: its pool's config holds the URL's password, and spew (in
// testify's diffs) walks unexported fields and pointers without calling a
// method. The pool here is connected and warm, as a serving store's is.
func TestStoreHoldsNoPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	// The local server trusts the role whatever the password; one set in
	// the URL still sits in the pool's config and in each connection's.
	const password = "St0re-pa55w0rd-in-the-pool"
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), password)
	pool := db.NewPool(t, func(c *pgxpool.Config) {
		c.ConnConfig.Password = password
		c.MaxConns = 2
	})
	cfgPool, err := pgxpool.ParseConfig(u.String())
	require.NoError(t, err)
	urlPool, err := pgxpool.NewWithConfig(ctx, cfgPool)
	require.NoError(t, err)
	t.Cleanup(urlPool.Close)

	hasher, err := domain.NewKeyHasher([]byte("runlimit postgres store tests, 32+ bytes of secret"))
	require.NoError(t, err)
	p := policy(t, "leak", 5, time.Hour)
	var cases []leakcheck.Case
	for _, pl := range []*pgxpool.Pool{pool, urlPool} {
		store, err := postgres.New(pl, postgres.Config{Schema: "public"})
		require.NoError(t, err)
		_, err = store.AdmitCheck(ctx, domain.NewCheck(p, hasher.KeyString(p, "warm")))
		require.NoError(t, err)
		cases = append(cases,
			leakcheck.Value("Store", store),
			leakcheck.Value("Config", store.Config()))
	}
	for _, c := range cases {
		c.Run(t, []byte(password))
	}
}

// A name that fails its check may be anything, such as a database URL
// written into the Schema or Protocol field: a ConfigError says what is
// wrong with it without repeating it, in its text and its fields. No
// database is needed: New checks the config before it uses the pool.
func TestConfigErrorsDoNotRepeatARejectedName(t *testing.T) {
	t.Parallel()
	const password = "Cf9-wr0ng-f1eld-pw"
	url := "postgres://runlimit:" + password + "@127.0.0.1:1/x"
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	_, schemaErr := postgres.New(pool, postgres.Config{Schema: url})
	var ce *postgres.ConfigError
	require.ErrorAs(t, schemaErr, &ce)
	require.Equal(t, "Schema", ce.Field)
	_, parseErr := postgres.ParseProtocol(url)
	require.ErrorIs(t, parseErr, postgres.ErrInvalidConfig)
	var p postgres.Protocol
	textErr := p.UnmarshalText([]byte(url))
	require.ErrorIs(t, textErr, postgres.ErrInvalidConfig)
	var cfg postgres.Config
	jsonErr := json.Unmarshal([]byte(`{"Protocol":"`+url+`"}`), &cfg)
	require.ErrorIs(t, jsonErr, postgres.ErrInvalidConfig)
	for name, err := range map[string]error{"Schema": schemaErr, "ParseProtocol": parseErr, "UnmarshalText": textErr, "json.Unmarshal": jsonErr} {
		leakcheck.Check(t, name+" error", err, []byte(password))
	}
	require.Contains(t, schemaErr.Error(), "byte 8 is not an ASCII letter, digit or underscore", "the error still says what is wrong")
}
