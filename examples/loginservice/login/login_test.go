package login_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/examples/loginservice/login"
)

// Each test below starts the service on a real listener, on the memory
// store and on PostgreSQL behind the memory gate, and drives it with
// real HTTP requests from distinct loopback addresses, each a client
// network of its own. Every response is checked whole: status, body and
// every header, and that it repeats no identity, password or address.

// TestAllowed: a right password gets 200 with every limit's state but
// the identity's, which is private; a wrong one 401, counted like any
// attempt; a JSON body works as a form does.
func TestAllowed(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b)
			s.expect(s.login("127.0.0.2", login.DemoIdentity, login.DemoPassword), want{
				status:    200,
				body:      okBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			})
			s.clock.Advance(10 * time.Second)
			s.expect(s.login("127.0.0.2", login.DemoIdentity, "not-the-password"), want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(0, 50), client(4, 50), network(8, 50)),
				policy:    qAll,
			})
			s.note(login.OtherDemoIdentity, login.OtherDemoPassword)
			json := `{"identity": "Bob@Example.com", "password": "` + login.OtherDemoPassword + `"}`
			s.expect(s.post("127.0.0.3", "application/json; charset=utf-8", json, nil), want{
				status:    200,
				body:      okBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			})
			s.expect(s.get("127.0.0.2", "/healthz"), want{status: 200, body: readyBody})
		})
	}
}

// TestDeniedByIdentity: one identity tried from four networks, spelled
// four ways, shares one quota of 3; the fourth attempt is refused with
// 429 even with the right password, and Retry-After is when the
// identity's window ends. The refused batch consumed nothing: the
// network it came from still has its whole client quota.
func TestDeniedByIdentity(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b)
			s.expect(s.login("127.0.0.2", "alice@example.com", "guess-1"), want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			})
			s.clock.Advance(10 * time.Second)
			s.expect(s.login("127.0.0.3", "Alice@Example.com", "guess-2"), want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			})
			s.clock.Advance(10 * time.Second)
			s.expect(s.login("127.0.0.4", "ALICE@EXAMPLE.COM", "guess-3"), want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			})
			s.clock.Advance(10 * time.Second)
			s.expect(s.login("127.0.0.5", " alice@example.com", login.DemoPassword), want{
				status:     429,
				body:       tooManyBody,
				rateLimit:  list(identity(0, 30), trial(1, 60), network(9, 60)),
				policy:     qAll,
				retryAfter: "30",
			})
			// The denied batch left the client's quota whole: client r=5.
			s.expect(s.login("127.0.0.5", "bob@example.com", "guess-4"), want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(0, 60), client(5, 60), network(8, 60)),
				policy:    qAll,
			})
		})
	}
}

// TestIdentityStateIsPrivate: anyone may try any identity, so another
// client's attempts on it must not show in yours. One network tries
// alice twice; then another network's admitted attempt on alice answers
// exactly as a third network's attempt on bob, whom nobody tried: the
// same status, body and fields, with nothing of alice's count or of when
// her window began. Her refusal shows them, as the 429 gives the lockout
// away anyway: r=0, and Retry-After when her window ends.
func TestIdentityStateIsPrivate(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b)
			s.expect(s.login("127.0.0.2", "alice@example.com", "guess-1"), want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			})
			s.clock.Advance(10 * time.Second)
			s.expect(s.login("127.0.0.2", "alice@example.com", "guess-2"), want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(0, 50), client(4, 50), network(8, 50)),
				policy:    qAll,
			})
			s.clock.Advance(10 * time.Second)
			onAlice := s.login("127.0.0.3", "Alice@Example.com", "guess-3")
			onBob := s.login("127.0.0.4", login.OtherDemoIdentity, "guess-3")
			fresh := want{
				status:    401,
				body:      invalidBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			}
			s.expect(onAlice, fresh)
			s.expect(onBob, fresh)
			onAlice.header.Del("Date")
			onBob.header.Del("Date")
			require.Equal(t, onBob, onAlice, "another network's attempts on alice show in the answer")

			// That third attempt spent alice's quota of 3.
			s.clock.Advance(5 * time.Second)
			s.expect(s.login("127.0.0.4", "alice@example.com", login.DemoPassword), want{
				status:     429,
				body:       tooManyBody,
				rateLimit:  list(trial(0, 55), identity(0, 35), network(8, 55)),
				policy:     qAll,
				retryAfter: "35",
			})
		})
	}
}

// TestDeniedByClient: one network trying seven identities gets its
// client quota of 6, then 429; the shadow trial policy said r=0 from the
// third attempt on without refusing any. The refused batch consumed
// nothing: its identity still has its whole quota of 3, which another
// network then spends before the identity refuses it. RateLimit-Policy
// stays the same field.
func TestDeniedByClient(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b)
			wants := []string{
				list(trial(1, 60), client(5, 60), network(9, 60)),
				list(trial(0, 60), client(4, 60), network(8, 60)),
				list(trial(0, 60), client(3, 60), network(7, 60)),
				list(trial(0, 60), client(2, 60), network(6, 60)),
				list(trial(0, 60), client(1, 60), network(5, 60)),
				list(trial(0, 60), client(0, 60), network(4, 60)),
			}
			for i, w := range wants {
				s.expect(s.login("127.0.0.6", "user"+string(rune('1'+i))+"@example.com", "guess"), want{
					status: 401, body: invalidBody, rateLimit: w, policy: qAll,
				})
			}
			s.expect(s.login("127.0.0.6", "user7@example.com", "guess"), want{
				status:     429,
				body:       tooManyBody,
				rateLimit:  list(trial(0, 60), client(0, 60), network(3, 60)),
				policy:     qAll,
				retryAfter: "60",
			})
			// The identity's state is private, so its whole quota shows in
			// how many attempts it takes: three, the fourth is refused.
			for _, w := range []string{
				list(trial(1, 60), client(5, 60), network(9, 60)),
				list(trial(0, 60), client(4, 60), network(8, 60)),
				list(trial(0, 60), client(3, 60), network(7, 60)),
			} {
				s.expect(s.login("127.0.0.7", "user7@example.com", "guess"), want{
					status: 401, body: invalidBody, rateLimit: w, policy: qAll,
				})
			}
			s.expect(s.login("127.0.0.7", "user7@example.com", "guess"), want{
				status:     429,
				body:       tooManyBody,
				rateLimit:  list(trial(0, 60), identity(0, 60), network(6, 60)),
				policy:     qAll,
				retryAfter: "60",
			})
			require.Len(t, s.logs.records("login: shadow denial"), 7, "attempts 3 to 7 of one network and 3 to 4 of the other were over the trial limit")
		})
	}
}

// TestShadow: the trial policy in shadow mode never refuses: the third
// login from one network is over its limit of 2 and still succeeds, with
// r=0 in RateLimit, no Retry-After and one log record naming the policy.
// Without a trial policy the fields do not name it.
func TestShadow(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b)
			s.expect(s.login("127.0.0.7", login.DemoIdentity, login.DemoPassword), want{
				status:    200,
				body:      okBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			})
			s.clock.Advance(10 * time.Second)
			s.expect(s.login("127.0.0.7", login.OtherDemoIdentity, login.OtherDemoPassword), want{
				status:    200,
				body:      okBody,
				rateLimit: list(trial(0, 50), client(4, 50), network(8, 50)),
				policy:    qAll,
			})
			require.Empty(t, s.logs.records("login: shadow denial"))
			s.clock.Advance(10 * time.Second)
			s.expect(s.login("127.0.0.7", login.DemoIdentity, login.DemoPassword), want{
				status:    200,
				body:      okBody,
				rateLimit: list(trial(0, 40), client(3, 40), network(7, 40)),
				policy:    qAll,
			})
			records := s.logs.records("login: shadow denial")
			require.Len(t, records, 1)
			require.Contains(t, records[0], `"policy":"login.trial/network"`)
			require.Contains(t, records[0], `"level":"INFO"`)

			off := start(t, b, func(c *login.Config) { c.Limits.Trial = -1 })
			off.expect(off.login("127.0.0.7", login.DemoIdentity, login.DemoPassword), want{
				status:    200,
				body:      okBody,
				rateLimit: list(client(5, 60), network(9, 60)),
				policy:    list(qIdentity, qClient, qNetwork),
			})
		})
	}
}

// TestBadRequests: a body the service cannot use is answered 4xx after
// the middleware counted the network, and never reaches the shared quota:
// the fields name the gate's policies only. Once the network's limit is
// spent, the middleware refuses before reading the body, however large.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	s := start(t, backend{name: "memory", config: memoryConfig, exact: true})
	s.note("alice", "secret-guess", "alice@example.com")
	cases := []struct {
		contentType, body string
		status            int
		answer            string
	}{
		{"application/json", `{"identity":`, 400, malformedBody},
		{"application/json", `{"identity":"alice@example.com","password":"secret-guess","otp":"1"}`, 400, malformedBody},
		{"application/json", `{"identity":"alice@example.com","password":"secret-guess"} {}`, 400, malformedBody},
		{"application/x-www-form-urlencoded", "identity=alice%40example.com", 400, incompleteBody},
		{"application/x-www-form-urlencoded", "identity=alice%40example.com&identity=bob%40example.com&password=secret-guess", 400, malformedBody},
		{"text/plain", "alice@example.com secret-guess", 415, mediaTypeBody},
		{"", "identity=alice%40example.com&password=secret-guess", 415, mediaTypeBody},
		{"application/json", `{"identity":"alice` + strings.Repeat(" ", login.DefaultMaxBodyBytes) + `","password":"secret-guess"}`, 413, tooLargeBody},
		{"application/json", `{"identity":"alice\u0007@example.com","password":"secret-guess"}`, 400, invalidIDBody},
	}
	for i, c := range cases {
		left := 9 - i
		w := want{status: c.status, body: c.answer, rateLimit: list(trial(1, 60), network(left, 60)), policy: qGate}
		if i > 0 {
			w.rateLimit = list(trial(0, 60), network(left, 60))
		}
		s.expect(s.post("127.0.0.2", c.contentType, c.body, nil), w)
	}
	// A password in the query string is not read: the body has none.
	query := s.postTo("127.0.0.2", "/login?password=secret-guess", "application/x-www-form-urlencoded", "identity=alice%40example.com", nil)
	s.expect(query, want{status: 400, body: incompleteBody, rateLimit: list(network(0, 60), trial(0, 60)), policy: qGate})
	s.expect(s.post("127.0.0.2", "application/json", strings.Repeat("x", 1<<20), nil), want{
		status:     429,
		body:       tooManyBody,
		rateLimit:  network(0, 60),
		policy:     qNetwork,
		retryAfter: "60",
	})
}
