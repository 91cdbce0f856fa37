package login_test

import (
	"testing"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/examples/loginservice/login"
)

// TestStorageCapacity: when the memory store (or, in front of PostgreSQL,
// the gate) has no room for a new network's counter, the middleware
// refuses with 429 before the body is read. No limit's state is known, so
// RateLimit is absent; Retry-After is when the store's earliest counter
// expires.
func TestStorageCapacity(t *testing.T) {
	t.Parallel()
	// Room for exactly the first request's counters: four in the one
	// memory store (network, trial, client, identity), two in the gate
	// (network, trial).
	room := map[string]func(*login.Config){
		"memory":   func(c *login.Config) { c.Runtime.Memory.MaxKeys = 4 },
		"postgres": func(c *login.Config) { c.Runtime.Gate.MaxKeys = 2 },
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b, room[b.name])
			s.expect(s.login("127.0.0.2", login.DemoIdentity, login.DemoPassword), want{
				status:    200,
				body:      okBody,
				rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
				policy:    qAll,
			})
			s.clock.Advance(5 * time.Second)
			s.expect(s.login("127.0.0.3", login.DemoIdentity, login.DemoPassword), want{
				status:     429,
				body:       tooManyBody,
				policy:     qNetwork,
				retryAfter: "55",
			})
		})
	}
}

// TestStorageCapacityOfTheSharedQuota: on the memory backend a new
// identity from a known network finds no room at the guard: 429, with the
// middleware's limits known and the guard's not, and Retry-After from the
// store. Once every counter has expired, the same store admits again.
func TestStorageCapacityOfTheSharedQuota(t *testing.T) {
	t.Parallel()
	s := start(t, backend{name: "memory", config: memoryConfig, exact: true}, func(c *login.Config) {
		c.Runtime.Memory = memory.Config{MaxKeys: 4, Clock: c.Runtime.Memory.Clock}
	})
	s.expect(s.login("127.0.0.2", login.DemoIdentity, login.DemoPassword), want{
		status:    200,
		body:      okBody,
		rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
		policy:    qAll,
	})
	s.clock.Advance(20 * time.Second)
	s.expect(s.login("127.0.0.2", login.OtherDemoIdentity, login.OtherDemoPassword), want{
		status:     429,
		body:       tooManyBody,
		rateLimit:  list(trial(0, 40), network(8, 40)),
		policy:     qAll,
		retryAfter: "40",
	})
	s.clock.Advance(40 * time.Second)
	s.expect(s.login("127.0.0.3", login.OtherDemoIdentity, login.OtherDemoPassword), want{
		status:    200,
		body:      okBody,
		rateLimit: list(trial(1, 60), client(5, 60), network(9, 60)),
		policy:    qAll,
	})
}
