package httplimit_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/leakcheck"
	"github.com/runlimit/runlimit/ports"
)

// headerKey is a key function a host might write: the value of an API
// key header, which is absent from anonymous requests.
func headerKey(dst []byte, r *http.Request) ([]byte, error) {
	return append(dst, r.Header.Get("X-Api-Key-Id")...), nil
}

// TestEmptySubjectIsRefused: a key function that found nothing used to
// have its request counted under the empty subject, one bucket shared by
// every such request, so that one anonymous client could spend the quota
// of all the others (and be refused for theirs). Such a request is now
// refused as a key failure before anything is checked, and so is a
// subject too long to be an identifier.
func TestEmptySubjectIsRefused(t *testing.T) {
	t.Parallel()
	overlong := strings.Repeat("k", httplimit.MaxSubjectLength+1)
	for _, tc := range []struct {
		name   string
		key    httplimit.KeyFunc
		header string
		length int
	}{
		{name: "nil", key: func([]byte, *http.Request) ([]byte, error) { return nil, nil }},
		{name: "dst unchanged", key: func(dst []byte, _ *http.Request) ([]byte, error) { return dst, nil }},
		{name: "header absent", key: headerKey},
		{name: "overlong", key: headerKey, header: overlong, length: len(overlong)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			p := domain.MustPolicy("api", "key", 1, time.Minute)
			m, _, rr := f.recordingMiddleware(t, tc.key, p)
			next := &recorder{}
			h := m.Handler(next)
			for _, remote := range []string{"192.0.2.1:1", "198.51.100.2:2"} {
				r := request("GET", "/", remote, "")
				if tc.header != "" {
					r.Header.Set("X-Api-Key-Id", tc.header)
				}
				w := do(h, r)
				require.Equal(t, http.StatusTeapot, w.Code)
			}
			require.Zero(t, next.calls)
			require.Equal(t, 2, rr.calls)
			require.Equal(t, httplimit.ReasonKey, rr.reason)
			var se *httplimit.SubjectError
			require.ErrorAs(t, rr.err, &se)
			require.Equal(t, httplimit.SubjectError{Index: 0, Length: tc.length}, *se)
			require.ErrorIs(t, rr.err, httplimit.ErrInvalidSubject)
			require.ErrorIs(t, rr.err, domain.ErrInvalidInput)
			require.False(t, ports.MayHaveConsumedQuota(rr.err))
			st, err := f.store.Stats(t.Context())
			require.NoError(t, err)
			require.Zero(t, st.Entries, "nothing was counted")
			if tc.length > 0 {
				leakcheck.Check(t, "SubjectError", rr.err, []byte(overlong))
			}
		})
	}
}

// TestSubjectAtTheBoundIsCounted: a subject of MaxSubjectLength bytes,
// and one of a single byte, are counted apart.
func TestSubjectAtTheBoundIsCounted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	p := domain.MustPolicy("api", "key", 1, time.Minute)
	h := f.middleware(t, headerKey, limitOf(p)).Handler(&recorder{})
	for _, id := range []string{strings.Repeat("k", httplimit.MaxSubjectLength), "k"} {
		r := request("GET", "/", "192.0.2.1:1", "")
		r.Header.Set("X-Api-Key-Id", id)
		require.Equal(t, http.StatusOK, do(h, r).Code, "%d bytes", len(id))
	}
}

// TestGuardRefusesAnEmptySubject: a Guard given an empty subject, such as
// a form field the client left out and the handler did not normalize,
// refuses the request before checking anything, rather than count every
// such request as one.
func TestGuardRefusesAnEmptySubject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		subjects [][]byte
		index    int
		length   int
	}{
		{name: "empty identity", subjects: [][]byte{[]byte("192.0.2.1/32"), {}}, index: 1},
		{name: "nil client", subjects: [][]byte{nil, []byte("alice")}, index: 0},
		{name: "overlong identity", subjects: [][]byte{[]byte("c"), bytes.Repeat([]byte("a"), httplimit.MaxSubjectLength+1)},
			index: 1, length: httplimit.MaxSubjectLength + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			var seen []refusal
			g, err := httplimit.NewGuard(httplimit.Config{Limiter: f.limiter, Hasher: f.hasher,
				Limits: []httplimit.Limit{limitOf(loginClient), limitOf(loginIdentity)}, Reject: recordingReject(&seen)})
			require.NoError(t, err)
			w := newRecorder()
			_, ok := g.Admit(w, request("POST", "/login", "192.0.2.1:1", ""), tc.subjects...)
			require.False(t, ok)
			require.Equal(t, http.StatusServiceUnavailable, w.Code)
			require.Len(t, seen, 1)
			require.Equal(t, httplimit.ReasonKey, seen[0].reason)
			var se *httplimit.SubjectError
			require.ErrorAs(t, seen[0].err, &se)
			require.Equal(t, httplimit.SubjectError{Index: tc.index, Length: tc.length}, *se)
			st, err := f.store.Stats(t.Context())
			require.NoError(t, err)
			require.Zero(t, st.Entries, "nothing was counted")
		})
	}
}
