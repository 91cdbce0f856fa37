package pgerror_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/internal/pgerror"
	"github.com/runlimit/runlimit/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fatalRecorder is a testing.TB whose Fatalf records instead of stopping,
// to show that a raw driver error does leak.
type fatalRecorder struct {
	testing.TB
	failed []string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

const password = "S3cr3t-pa55w0rd"

// leaks reports whether leakcheck finds a secret in v.
func leaks(t *testing.T, v any, secrets ...[]byte) bool {
	r := &fatalRecorder{TB: t}
	leakcheck.Check(r, "raw", v, secrets...)
	return len(r.failed) > 0
}

// Real driver errors carry secrets that every printer reaches; their
// sanitized forms keep what an operator needs and nothing else, alone and
// wrapped.
func TestSanitizeDropsEverySecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)

	// A unique violation, whose detail spells both keys in hex.
	fp, sk := make([]byte, 32), make([]byte, 32)
	_, _ = rand.Read(fp)
	_, _ = rand.Read(sk)
	insert := `INSERT INTO runlimit_fixed_windows VALUES ('p', 's', $1, $2, now(), now() + interval '1 hour', 1)`
	_, err := db.Pool.Exec(ctx, insert, fp, sk)
	require.NoError(t, err)
	_, uniqueErr := db.Pool.Exec(ctx, insert, fp, sk)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, uniqueErr, &pgErr)
	require.Equal(t, "23505", pgErr.Code)

	// A connection error, which holds the whole config, password included.
	_, connectErr := pgconn.Connect(ctx, "postgres://runlimit:"+password+"@127.0.0.1:1/x?sslmode=disable&connect_timeout=5")
	var ce *pgconn.ConnectError
	require.ErrorAs(t, connectErr, &ce)
	// A server that rejects the password answers with its own error inside
	// the connection error.
	rejected := db.URL
	if u, err := pgx.ParseConfig(db.URL); err == nil {
		rejected = fmt.Sprintf("postgres://no_such_role:%s@%s:%d/%s?sslmode=disable", password, u.Host, u.Port, u.Database)
	}
	_, rejectedErr := pgconn.Connect(ctx, rejected)
	require.Error(t, rejectedErr)
	// A parse error, which holds the connection string as written.
	_, parseErr := pgxpool.ParseConfig("postgres://runlimit:" + password + "@127.0.0.1:notaport/x")
	var pce *pgconn.ParseConfigError
	require.ErrorAs(t, parseErr, &pce)

	for _, tc := range []struct {
		name    string
		err     error
		secrets [][]byte
		code    string
	}{
		{"unique violation", uniqueErr, [][]byte{fp, sk}, "23505"},
		{"connect error", connectErr, [][]byte{[]byte(password)}, ""},
		{"rejected password", rejectedErr, [][]byte{[]byte(password)}, "28"}, // 28000 or 28P01, by authentication method
		{"parse error", parseErr, [][]byte{[]byte(password)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.True(t, leaks(t, tc.err, tc.secrets...), "the raw error was expected to leak")
			safe := pgerror.Sanitize(tc.err)
			leakcheck.Check(t, tc.name, safe, tc.secrets...)
			leakcheck.Check(t, tc.name+" wrapped", fmt.Errorf("runlimit: step: %w", safe), tc.secrets...)
			leakcheck.Check(t, tc.name+" joined", errors.Join(errors.New("first"), safe), tc.secrets...)
			var e *pgerror.Error
			require.ErrorAs(t, safe, &e)
			require.True(t, strings.HasPrefix(e.Code, tc.code), "code %q", e.Code)
			require.Equal(t, e.Code, e.SQLState())
			require.NotEmpty(t, e.Message)
		})
	}

	safe := pgerror.Sanitize(uniqueErr).(*pgerror.Error)
	require.Equal(t, "ERROR", safe.Severity)
	require.Equal(t, "runlimit_fixed_windows_pkey", safe.ConstraintName)
	require.Equal(t, `duplicate key value violates unique constraint "runlimit_fixed_windows_pkey"`, safe.Message)
	require.Equal(t, pgErr.Error(), safe.Error())
	require.False(t, safe.Timeout)
}

func TestSanitizeKeepsTimeoutsAndContexts(t *testing.T) {
	t.Parallel()
	require.Nil(t, pgerror.Sanitize(nil))
	require.Equal(t, context.Canceled, pgerror.Sanitize(context.Canceled))
	require.Equal(t, context.DeadlineExceeded, pgerror.Sanitize(context.DeadlineExceeded))

	wrapped := pgerror.Sanitize(fmt.Errorf("read: %w", context.DeadlineExceeded))
	require.ErrorIs(t, wrapped, context.DeadlineExceeded)
	require.True(t, wrapped.(*pgerror.Error).Timeout)
	cancelled := pgerror.Sanitize(fmt.Errorf("read: %w", context.Canceled))
	require.ErrorIs(t, cancelled, context.Canceled)
	require.False(t, cancelled.(*pgerror.Error).Timeout)
	require.Same(t, wrapped, pgerror.Sanitize(wrapped))

	for code, timeout := range map[string]bool{"57014": true, "55P03": true, "25P03": true, "23505": false} {
		e := pgerror.Sanitize(&pgconn.PgError{Severity: "ERROR", Code: code, Message: "m"}).(*pgerror.Error)
		require.Equal(t, timeout, e.Timeout, code)
	}

	// A message that spells bytes in hex, or raw, is masked.
	e := pgerror.Sanitize(&pgconn.PgError{Severity: "ERROR", Code: "P0001",
		Message: `bad key \x00ff10 and deadbeefcafe1234 and ` + "\x01\xfe"}).(*pgerror.Error)
	require.Equal(t, "bad key [hex] and [hex] and ??", e.Message)

	// SafeToRetry survives for pgconn's predicate.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := pgconn.Connect(ctx, "postgres://u@127.0.0.1:1/x?connect_timeout=1")
	require.Error(t, err)
	require.Equal(t, pgconn.SafeToRetry(err), pgconn.SafeToRetry(pgerror.Sanitize(err)))
}
