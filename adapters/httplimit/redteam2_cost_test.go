package httplimit_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
)

// remainingOf returns the r of the one item of a RateLimit field.
func remainingOf(t *testing.T, field string) int {
	t.Helper()
	_, after, ok := strings.Cut(field, ";r=")
	require.True(t, ok, field)
	r, _, _ := strings.Cut(after, ";")
	n, err := strconv.Atoi(r)
	require.NoError(t, err)
	return n
}

// The fields of draft 11 count requests: RateLimit-Policy has no quota
// unit parameter (qu), whose default is "requests". A limit whose
// requests cost more than one unit of its policy is reported in its own
// requests, so that a client that trusts the fields is never refused:
// q is the requests a window admits and r the requests left, never the
// units, which promise requests that the limiter then denies.
func TestFieldsCountRequestsOfCost(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// hourly: 5 units per 10 minutes; at 2 units a request, 2 requests.
	h := f.middleware(t, httplimit.RemoteNetwork, httplimit.Limit{Policy: hourly, Cost: 2, Name: "upload"}).Handler(&recorder{})

	var statuses []int
	var fields []string
	for range 3 {
		w := do(h, request("POST", "/", "192.0.2.1:1", ""))
		statuses = append(statuses, w.Code)
		fields = append(fields, w.Header().Get("RateLimit"))
		require.Equal(t, `"upload";q=2;w=600`, w.Header().Get("RateLimit-Policy"))
	}
	require.Equal(t, []int{200, 200, 429}, statuses)
	require.Equal(t, []string{`"upload";r=1;t=600`, `"upload";r=0;t=600`, `"upload";r=0;t=600`}, fields)

	// Trusting r: after each admitted response, exactly r more requests
	// are admitted in the window.
	for _, cost := range []int64{1, 2, 3, 5} {
		f := setup(t)
		h := f.middleware(t, httplimit.RemoteNetwork, httplimit.Limit{Policy: hourly, Cost: cost}).Handler(&recorder{})
		w := do(h, request("POST", "/", "192.0.2.1:1", ""))
		require.Equal(t, http.StatusOK, w.Code)
		promised := remainingOf(t, w.Header().Get("RateLimit"))
		admitted := 0
		for {
			w := do(h, request("POST", "/", "192.0.2.1:1", ""))
			if w.Code != http.StatusOK {
				break
			}
			admitted++
		}
		require.Equal(t, promised, admitted, "cost %d: r promised %d more requests, %d were admitted", cost, promised, admitted)
	}
}
