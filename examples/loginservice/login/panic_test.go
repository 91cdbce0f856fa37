package login_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/examples/loginservice/login"
)

// TestPanicLogNamesNoPeer: a handler that panics is logged by the service
// with its route and what went wrong, and its response is aborted, but no
// log record names the client's address. net/http's own record of a panic
// starts "http: panic serving 127.0.0.2:port"; the check that ends every
// test of the service finds the address in it. A panic value that is not
// a runtime error may quote anything, the address here: only its type is
// logged.
func TestPanicLogNamesNoPeer(t *testing.T) {
	t.Parallel()
	route := func(pattern string, h http.HandlerFunc) fx.Option {
		return fx.Provide(fx.Annotate(func() login.Route { return login.Route{Pattern: pattern, Handler: h} },
			fx.ResultTags(`group:"`+login.RoutesGroup+`"`)))
	}
	clock := memory.NewManualClock()
	s := startOn(t, memoryConfig(t, clock), listen(t), clock, true,
		route("GET /crash", func(http.ResponseWriter, *http.Request) {
			var table []int
			_ = table[len(strings.Repeat("x", 3))] // an index out of range, as a bug would make
		}),
		route("GET /crash-value", func(_ http.ResponseWriter, r *http.Request) {
			panic(errors.New("unexpected client " + r.RemoteAddr))
		}),
	)
	for _, path := range []string{"/crash", "/crash-value"} {
		req, err := http.NewRequest(http.MethodGet, s.base+path, nil)
		require.NoError(t, err)
		resp, err := s.from("127.0.0.2").Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		require.Error(t, err, "%s: the response is aborted, not completed", path)
	}

	records := s.logs.records("login: handler panicked")
	require.Len(t, records, 2)
	require.Contains(t, records[0], `"route":"GET /crash"`)
	require.Contains(t, records[0], `"panic":"runtime error: index out of range [3] with length 0"`)
	require.Contains(t, records[0], "panic_test.go", "the stack names the panicking function")
	require.Contains(t, records[1], `"route":"GET /crash-value"`)
	require.Contains(t, records[1], `"panic":"*errors.errorString"`)

	// The service goes on serving.
	require.Equal(t, 200, s.get("127.0.0.2", "/healthz").status)
}
