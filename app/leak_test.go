package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// leakPassword is the password of the connection strings a hostile store
// error carries.
const leakPassword = "hunter2-leak-password"

func TestNothingPrintsKeysOrStoreErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hasher, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)

	subjects := []string{"alice@example.test", "198.51.100.7"}
	p := loginPolicy(t, "auth.login")
	checks := []domain.Check{
		domain.NewCheck(p, hasher.KeyString(p, subjects[0])),
		domain.NewCheck(p, hasher.KeyString(p, subjects[1])),
	}

	var events []app.Event
	observer := app.ObserverFunc(func(e app.Event) { events = append(events, e) })
	store := newMemoryStore(t)
	limiterCfg := app.LimiterConfig{Observer: observer, Name: "edge"}
	limiter, err := app.NewLimiter(store, limiterCfg)
	require.NoError(t, err)
	for range 2 { // allowed, then denied
		_, err = limiter.CheckAll(ctx, checks)
		require.NoError(t, err)
		_, err = limiter.Check(ctx, checks[0])
		require.NoError(t, err)
	}
	require.NoError(t, store.Close())
	_, err = limiter.Check(ctx, checks[1])
	require.ErrorIs(t, err, memory.ErrClosed)
	require.Len(t, events, 5)

	_, limiterErr := app.NewLimiter(nil, app.LimiterConfig{})
	require.ErrorIs(t, limiterErr, app.ErrInvalidConfig)

	secrets := [][]byte{[]byte(testSecret)}
	secrets = append(secrets, leakcheck.KeyedStates(t, []byte(testSecret))...)
	for i, c := range checks {
		sk := c.SubjectKey().Bytes()
		secrets = append(secrets, []byte(subjects[i]), sk[:])
	}

	cases := []leakcheck.Case{
		leakcheck.Value("Limiter", limiter),
		leakcheck.Value("LimiterConfig", limiterCfg),
		leakcheck.Value("allowed batch Event", events[0]),
		leakcheck.Value("allowed single Event", events[1]),
		leakcheck.Value("denied batch Event", events[2]),
		leakcheck.Value("denied single Event", events[3]),
		leakcheck.Value("Event with a store error", events[4]),
		leakcheck.Value("NewLimiter error", limiterErr),
		leakcheck.Value("ErrInvalidConfig", app.ErrInvalidConfig),
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			tc.Run(t, secrets...)
		})
	}
}

// hostileError is a store error whose exported fields hold what a server
// error can: a row's key in hex, a connection string.
type hostileError struct {
	Detail string
	URL    string
}

func (e *hostileError) Error() string { return "store failed" }

// TestEventEncodingsShowOnlyTheErrorText: encoding/json and both slog
// handlers print an Event's error as its text, never its fields.
func TestEventEncodingsShowOnlyTheErrorText(t *testing.T) {
	t.Parallel()
	keyHex := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	e := app.Event{Limiter: "postgres", Size: 0, Index: -1, Duration: time.Millisecond,
		Err: &hostileError{Detail: "Key (subject_key)=(\\x" + keyHex + ")", URL: "postgres://u:" + leakPassword + "@db/q"}}

	b, err := json.Marshal(e)
	require.NoError(t, err)
	require.JSONEq(t, `{"limiter":"postgres","size":0,"policies":[],"error":"store failed",
		"may_have_consumed_quota":true,"duration":1000000}`, string(b))
	for name, h := range map[string]func(io.Writer) slog.Handler{
		"text": func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) },
		"json": func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) },
	} {
		var out bytes.Buffer
		slog.New(h(&out)).Info("admission", "event", e)
		require.Contains(t, out.String(), "store failed", name)
		require.NotContains(t, out.String(), keyHex[:12], name)
		require.NotContains(t, out.String(), leakPassword, name)
	}
}
