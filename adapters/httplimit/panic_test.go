package httplimit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/domain"
)

// TestHostPanicsFailClosed: a key function or a RejectFunc that panics
// takes the request down with it, as any handler's panic does in
// net/http (which recovers it and drops the connection): the handler is
// never reached, a key function's panic counts nothing, and a
// RejectFunc's panic consumes nothing more than the denial did.
func TestHostPanicsFailClosed(t *testing.T) {
	t.Parallel()
	p := domain.MustPolicy("api", "client", 1, time.Minute)

	t.Run("key function", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		next := &recorder{}
		h := f.middleware(t, func([]byte, *http.Request) ([]byte, error) { panic("key function bug") }, limitOf(p)).Handler(next)
		require.PanicsWithValue(t, "key function bug", func() { do(h, request("GET", "/", "192.0.2.1:1", "")) })
		require.Zero(t, next.calls)
		st, err := f.store.Stats(t.Context())
		require.NoError(t, err)
		require.Zero(t, st.Entries, "nothing was counted")
	})

	t.Run("reject function", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		cfg := f.config(httplimit.RemoteNetwork, limitOf(p))
		cfg.Reject = func(http.ResponseWriter, *http.Request, *httplimit.Rejection) { panic("reject function bug") }
		m, err := httplimit.NewMiddleware(cfg)
		require.NoError(t, err)
		next := &recorder{}
		h := m.Handler(next)
		require.Equal(t, http.StatusOK, do(h, request("GET", "/", "192.0.2.1:1", "")).Code)
		for range 2 {
			require.PanicsWithValue(t, "reject function bug", func() { do(h, request("GET", "/", "192.0.2.1:1", "")) })
		}
		require.Equal(t, 1, next.calls, "only the admitted request reached the handler")
		// The next window admits again: the denials consumed nothing.
		f.clock.Advance(time.Minute)
		require.Equal(t, http.StatusOK, do(h, request("GET", "/", "192.0.2.1:1", "")).Code)
	})
}
