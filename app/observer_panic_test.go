package app_test

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/ports"
)

// panicking is an observer that panics on every event, with a value built
// from the subject it was told about, or with a runtime error.
type panicking struct {
	subject string
	runtime bool
}

func (p panicking) ObserveAdmission(app.Event) {
	if p.runtime {
		var empty []int
		_ = empty[len(p.subject)] // index out of range: a runtime.Error
	}
	panic("observer choked on " + p.subject)
}

// TestPanickingObserversDoNotChangeAdmissions: a panic in an observer is
// recovered and logged; the caller gets the store's decision, and quota is
// consumed exactly once per admission, on stores with and without a
// single-check path, for checks and batches.
func TestPanickingObserversDoNotChangeAdmissions(t *testing.T) {
	t.Parallel()
	const subject = "alice@example.test"
	stores := map[string]func(t *testing.T) ports.Store{
		"single-check path": func(t *testing.T) ports.Store { return newMemoryStore(t) },
		"batches only":      func(t *testing.T) ports.Store { return batchOnly{newMemoryStore(t)} },
	}
	for storeName, newStore := range stores {
		for kind, runtimeErr := range map[string]bool{"a string": false, "a runtime error": true} {
			t.Run(storeName+"/"+kind, func(t *testing.T) {
				t.Parallel()
				var logs bytes.Buffer
				limiter, err := app.NewLimiter(newStore(t), app.LimiterConfig{
					Name:     "edge",
					Observer: panicking{subject: subject, runtime: runtimeErr},
					Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
				})
				require.NoError(t, err)
				hasher, err := domain.NewKeyHasher([]byte(testSecret))
				require.NoError(t, err)
				p := newPolicy(t, "auth.login", "identity", 1, time.Minute)
				check := domain.NewCheck(p, hasher.KeyString(p, subject))

				var d domain.Decision
				require.NotPanics(t, func() { d, err = limiter.Check(t.Context(), check) })
				require.NoError(t, err)
				require.Equal(t, domain.Allowed, d.Outcome())
				require.NotPanics(t, func() { d, err = limiter.Check(t.Context(), check) })
				require.NoError(t, err)
				require.Equal(t, domain.Denied, d.Outcome(), "the first check consumed the quota, once")

				other := domain.NewCheck(p, hasher.KeyString(p, "bob@example.test"))
				var bd domain.BatchDecision
				require.NotPanics(t, func() { bd, err = limiter.CheckAll(t.Context(), []domain.Check{other}) })
				require.NoError(t, err)
				require.Equal(t, domain.Allowed, bd.Outcome())
				require.NotPanics(t, func() { bd, err = limiter.CheckAll(t.Context(), []domain.Check{other, check}) })
				require.NoError(t, err)
				require.Equal(t, domain.Denied, bd.Outcome())

				out := logs.String()
				require.Equal(t, 4, bytes.Count(logs.Bytes(), []byte("level=ERROR")), out)
				require.Contains(t, out, "limiter=edge")
				require.Contains(t, out, "policies=auth.login/identity,auth.login/identity")
				require.Contains(t, out, "outcome=allowed")
				require.Contains(t, out, "outcome=denied")
				if runtimeErr {
					require.Contains(t, out, "panic_type=runtime.boundsError")
					require.Contains(t, out, `panic="runtime error: index out of range [18] with length 0"`)
				} else {
					require.Contains(t, out, "panic_type=string")
					require.NotContains(t, out, "panic=")
				}
				sk := check.SubjectKey().Bytes()
				leakcheck.Check(t, "the panic's log", out, []byte(subject), []byte("bob@example.test"),
					[]byte(testSecret), sk[:])
			})
		}
	}
}

// TestPanickingObserversKeepStoreErrors: a store error reaches the caller
// unchanged when the observer of the failed admission panics, and the log
// says the admission failed.
func TestPanickingObserversKeepStoreErrors(t *testing.T) {
	t.Parallel()
	store := newMemoryStore(t)
	var logs bytes.Buffer
	limiter, err := app.NewLimiter(store, app.LimiterConfig{
		Observer: panicking{subject: "x"},
		Logger:   slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	require.NoError(t, err)
	require.NoError(t, store.Close())
	hasher, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	p := newPolicy(t, "auth.login", "identity", 1, time.Minute)

	require.NotPanics(t, func() {
		_, err = limiter.Check(t.Context(), domain.NewCheck(p, hasher.KeyString(p, "x")))
	})
	require.ErrorIs(t, err, memory.ErrClosed)
	require.Contains(t, logs.String(), `"outcome":"error"`)
}

// TestPanickingObserversLogToTheDefaultLogger cannot run in parallel: it
// replaces slog's default logger.
func TestPanickingObserversLogToTheDefaultLogger(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	limiter, err := app.NewLimiter(newMemoryStore(t), app.LimiterConfig{Observer: panicking{subject: "x"}})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte(testSecret))
	require.NoError(t, err)
	p := newPolicy(t, "auth.login", "identity", 1, time.Minute)
	_, err = limiter.Check(t.Context(), domain.NewCheck(p, hasher.KeyString(p, "x")))
	require.NoError(t, err)
	require.Contains(t, logs.String(), "runlimit: observer panicked")
}
