package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/domain"
)

// nameConfigError matches every error NewMiddleware gives for a limit's
// name: the rule broken, never the name.
var nameConfigError = regexp.MustCompile(`^httplimit: invalid config: Limits\[1\]\.Name must be (1 to 128 bytes of printable ASCII( \(byte \d+ is not\))?|different from Limits\[0\]\.Name)$|^httplimit: invalid config: Limits\[0\]\.Name must be 1 to 128 bytes of printable ASCII( \(byte \d+ is not\))?$`)

// FuzzMiddlewareFields configures a Middleware with two limits named by
// any bytes and serves requests from a RemoteAddr of any text through a
// forwarding header of any value. The middleware is built exactly when both
// names (the default one for "") are 1 to 128 bytes of printable ASCII and
// differ, and its error never repeats a name. Every response's header
// values are printable ASCII whatever the request held; the RateLimit
// fields are Lists that name the configured limits and nothing else; a
// request the limits refuse is 429 with a Retry-After of digits; one
// whose client cannot be told (a RemoteAddr that is no address and port, a
// trusted proxy's malformed header) is 503 and never reaches the handler.
func FuzzMiddlewareFields(f *testing.F) {
	f.Add("api/client", "", "192.0.2.1:1234", "203.0.113.9", uint8(1), uint8(3))
	f.Add("a\r\nSet-Cookie: x=1", "b", "192.0.2.1:1", "", uint8(0), uint8(1))
	f.Add(`q"\`, `", "x";q=1`, "10.0.0.1:1", "for=\"[2001:db8::1]:80\";host=\"\r\n\"", uint8(2), uint8(3))
	f.Add("same", "same", "10.0.0.1:1", "", uint8(0), uint8(1))
	f.Add("fuzz.mw/one", "", "[fe80::1%eth0\r\n]:1", "1.2.3.4\r\nX: y", uint8(1), uint8(2))
	f.Add("x", "\u00e9", "not an address", "", uint8(5), uint8(2))
	p1 := domain.MustPolicy("fuzz.mw", "one", 2, time.Minute)
	p2 := domain.MustPolicy("fuzz.mw", "two", 1, time.Minute)
	f.Fuzz(func(t *testing.T, name1, name2, remote, forwarded string, header, requests uint8) {
		fx := setupStore(t, memory.Config{MaxKeys: 64})
		c, err := httplimit.NewClientNetwork(httplimit.ClientConfig{
			TrustedProxies: trusted,
			Header:         [...]httplimit.ForwardingHeader{httplimit.XForwardedForHeader, httplimit.ForwardedHeader}[header%2],
		})
		require.NoError(t, err)
		limits := []httplimit.Limit{{Policy: p1, Name: name1}, {Policy: p2, Name: name2, Private: header&4 != 0}}
		m, err := httplimit.NewMiddleware(fx.config(c.AppendSubject, limits...))
		names := []string{name1, name2}
		for i, n := range names {
			if n == "" {
				names[i] = limits[i].Policy.ID().String() + "/" + limits[i].Policy.Scope().String()
			}
		}
		valid := func(n string) bool { return len(n) >= 1 && len(n) <= 128 && printable(n) }
		if !valid(names[0]) || !valid(names[1]) || names[0] == names[1] {
			require.ErrorIs(t, err, httplimit.ErrInvalidConfig)
			require.Regexp(t, nameConfigError, err.Error())
			return
		}
		require.NoError(t, err)

		h := &recorder{}
		handler := m.Handler(h)
		for i := range int(requests%3) + 1 {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = remote
			r.Header["X-Forwarded-For"] = []string{forwarded}
			r.Header["Forwarded"] = []string{forwarded}
			_, keyErr := c.Prefix(r)
			w := httptest.NewRecorder()
			calls := h.calls
			handler.ServeHTTP(w, r)
			res := w.Result()
			for name, values := range res.Header {
				for _, v := range values {
					for j := 0; j < len(v); j++ {
						require.True(t, v[j] == '\t' || v[j] >= 0x20 && v[j] <= 0x7e, "%s: %q", name, v)
					}
				}
			}
			if keyErr != nil {
				require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
				require.Equal(t, calls, h.calls, "a request without a client reached the handler")
				continue
			}
			// Limit two admits one request a minute per client network.
			want := http.StatusOK
			if i > 0 {
				want = http.StatusTooManyRequests
			}
			require.Equal(t, want, res.StatusCode, "request %d", i)
			for _, field := range []string{"RateLimit-Policy", "RateLimit"} {
				v := res.Header.Get(field)
				if field == "RateLimit" && v == "" {
					continue // nothing known that may be shown
				}
				items, err := parseSFList(v)
				require.NoError(t, err, "%s: %q", field, v)
				var got []string
				for _, it := range items {
					got = append(got, it.name)
				}
				slices.Sort(got)
				if field == "RateLimit-Policy" {
					require.Equal(t, slices.Sorted(slices.Values(names)), got)
				} else {
					require.Subset(t, names, got)
				}
			}
			if want == http.StatusTooManyRequests {
				require.Regexp(t, `^[0-9]{1,15}$`, res.Header.Get("Retry-After"))
				require.Equal(t, calls, h.calls)
			} else {
				require.Equal(t, calls+1, h.calls)
			}
		}
	})
}
