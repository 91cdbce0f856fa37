package app_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// naming is an observer that appends its name and the event's outcome to
// a shared log, so a test sees who got which event in which order.
type naming struct {
	name string
	log  *[]string
}

func (n naming) ObserveAdmission(e app.Event) {
	*n.log = append(*n.log, n.name+":"+e.Outcome.String())
}

func TestJoinObservers(t *testing.T) {
	t.Parallel()
	var log []string
	a, b := naming{"a", &log}, naming{"b", &log}

	require.Nil(t, app.JoinObservers())
	require.Nil(t, app.JoinObservers(nil, nil))
	require.Equal(t, app.Observer(a), app.JoinObservers(nil, a, nil), "one observer is returned as itself")

	// Joined observers flatten: (a, b) joined with a again calls a, b, a.
	joined := app.JoinObservers(app.JoinObservers(a, b), a)
	joined.ObserveAdmission(app.Event{Outcome: domain.Allowed})
	require.Equal(t, []string{"a:allowed", "b:allowed", "a:allowed"}, log)
}

// TestJoinedObserversEachGetEveryEvent: through a limiter, every joined
// observer sees every admission in order, and one that panics keeps
// neither the next observer nor the caller from theirs.
func TestJoinedObserversEachGetEveryEvent(t *testing.T) {
	t.Parallel()
	for name, store := range map[string]func(t *testing.T) ports.Store{
		"single-check path": func(t *testing.T) ports.Store { return newMemoryStore(t) },
		"batches only":      func(t *testing.T) ports.Store { return batchOnly{newMemoryStore(t)} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var log []string
			var logs bytes.Buffer
			limiter, err := app.NewLimiter(store(t), app.LimiterConfig{
				Observer: app.JoinObservers(naming{"first", &log}, panicking{subject: "x"}, naming{"last", &log}),
				Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
			})
			require.NoError(t, err)
			hasher, err := domain.NewKeyHasher([]byte(testSecret))
			require.NoError(t, err)
			p := newPolicy(t, "auth.login", "identity", 1, time.Minute)
			check := domain.NewCheck(p, hasher.KeyString(p, "alice@example.test"))

			d, err := limiter.Check(t.Context(), check)
			require.NoError(t, err)
			require.Equal(t, domain.Allowed, d.Outcome())
			d, err = limiter.Check(t.Context(), check)
			require.NoError(t, err)
			require.Equal(t, domain.Denied, d.Outcome())

			require.Equal(t, []string{"first:allowed", "last:allowed", "first:denied", "last:denied"}, log)
			require.Equal(t, 2, strings.Count(logs.String(), "observer panicked"), "each panic is logged")
		})
	}
}
