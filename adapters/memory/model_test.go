package memory

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

// The store against a model of the rules it must follow. The model keeps no
// slots and does no cleanup: it only knows which windows are active. That is
// enough to predict every decision exactly, because a check removes expired
// entries before its shard is observed: a new key is denied for capacity
// only when the shard's active entries, plus the new keys earlier in the
// same batch, fill it. Shards, slots, the heap and cleanup are checked for
// their invariants after every step instead.

var modelPolicies = [2]domain.Policy{
	domain.MustPolicy("model", "short", 2, 3*time.Millisecond),
	domain.MustPolicy("model", "long", 3, 5*time.Millisecond),
}

const modelKeys = 8 // two policies, four subjects each

type modelCounter struct {
	used           int64
	start, expires domain.Instant
}

type model struct {
	t        *testing.T
	store    *Store
	clock    *ManualClock
	checks   [modelKeys]domain.Check
	keys     [modelKeys]domain.CounterKey
	counters [modelKeys]modelCounter
	last     []domain.Instant
	// single alternates single checks between Admit and AdmitCheck.
	single bool
}

func newModel(t *testing.T, maxKeys, shards, cleanup int) *model {
	clock := NewManualClock()
	s, err := New(Config{MaxKeys: maxKeys, Shards: shards, CleanupPerCheck: cleanup, MaxBatchSize: 4, Clock: clock})
	require.NoError(t, err)
	hasher, err := domain.NewKeyHasher([]byte("model-test-secret-of-32-bytes!!!"))
	require.NoError(t, err)
	m := &model{t: t, store: s, clock: clock, last: make([]domain.Instant, shards)}
	for i := range m.last {
		m.last[i] = math.MinInt64
	}
	for i := range modelKeys {
		p := modelPolicies[i%2]
		m.checks[i] = domain.NewCheck(p, hasher.KeyString(p, string(rune('a'+i/2))))
		m.keys[i] = m.checks[i].CounterKey()
	}
	return m
}

func (m *model) active(i int, now domain.Instant) bool {
	return m.counters[i].used > 0 && now < m.counters[i].expires
}

// admit runs keys (distinct indexes) through the store and requires the
// model's decision.
func (m *model) admit(idx []int, costs []int64) {
	t := m.t
	checks := make([]domain.Check, len(idx))
	for n, i := range idx {
		c, err := domain.NewCheckCost(m.checks[i].Policy(), m.checks[i].SubjectKey(), costs[n])
		require.NoError(t, err)
		checks[n] = c
	}
	// Single checks alternate between the batch path (Admit) and the
	// single-check path (AdmitCheck): both must follow the model.
	var (
		got admission
		b   *domain.Batch
		err error
	)
	m.single = !m.single
	if len(checks) == 1 && m.single {
		var d domain.Decision
		d, err = m.store.AdmitCheck(context.Background(), checks[0])
		got = singleAdmission{d}
	} else {
		b, err = domain.NewBatch(checks, 4)
		require.NoError(t, err)
		err = m.store.Admit(context.Background(), b)
	}

	// Structural: more keys on a shard than it holds.
	perShard := map[int]int{}
	for _, i := range idx {
		perShard[m.store.shardOf(m.keys[i])]++
	}
	for s, n := range perShard {
		if n > m.store.shards[s].capacity {
			var overflow *ShardOverflowError
			require.ErrorAs(t, err, &overflow)
			return
		}
	}
	require.NoError(t, err)
	if b != nil {
		bd, err := b.Decision()
		require.NoError(t, err)
		got = bd
	}

	now := m.clockInstant()
	for s := range perShard {
		now = max(now, m.last[s])
	}
	for s := range perShard {
		m.last[s] = now
	}
	claimed := map[int]int{}
	var next [modelKeys]modelCounter
	for n, i := range idx {
		p, cost := m.checks[i].Policy(), costs[n]
		c := m.counters[i]
		if m.active(i, now) {
			if cost > p.Limit()-c.used {
				m.requireDenied(got, n, domain.QuotaExhausted, c.expires.Sub(now), true)
				return
			}
			next[i] = modelCounter{used: c.used + cost, start: c.start, expires: c.expires}
			continue
		}
		s := m.store.shardOf(m.keys[i])
		activeOn, earliest := 0, domain.Instant(math.MaxInt64)
		for j := range modelKeys {
			if m.store.shardOf(m.keys[j]) == s && m.active(j, now) {
				activeOn++
				earliest = min(earliest, m.counters[j].expires)
			}
		}
		if activeOn+claimed[s] >= m.store.shards[s].capacity {
			m.requireDenied(got, n, domain.StorageCapacity, max(earliest.Sub(now), 0), activeOn > 0)
			return
		}
		claimed[s]++
		next[i] = modelCounter{used: cost, start: now, expires: now.Add(p.Window())}
	}
	require.Equal(t, domain.Allowed, got.Outcome())
	for n, i := range idx {
		a, ok := got.Decisions()[n].Allowance()
		require.True(t, ok)
		p := m.checks[i].Policy()
		require.Equal(t, domain.Allowance{Limit: p.Limit(), Remaining: p.Limit() - next[i].used, ResetAfter: next[i].expires.Sub(now)}, a)
		m.counters[i] = next[i]
	}
}

// admission is what the model reads of a store's answer: a BatchDecision, or
// a single decision through singleAdmission.
type admission interface {
	Outcome() domain.Outcome
	Denied() (int, domain.Denial, bool)
	Decisions() []domain.Decision
}

// singleAdmission reads a single check's decision as a batch of one.
type singleAdmission struct{ d domain.Decision }

func (a singleAdmission) Outcome() domain.Outcome { return a.d.Outcome() }

func (a singleAdmission) Denied() (int, domain.Denial, bool) {
	den, ok := a.d.Denial()
	return 0, den, ok
}

func (a singleAdmission) Decisions() []domain.Decision {
	if a.d.Outcome() != domain.Allowed {
		return nil
	}
	return []domain.Decision{a.d}
}

func (m *model) requireDenied(got admission, index int, reason domain.DenialReason, retry time.Duration, hasRetry bool) {
	t := m.t
	i, d, ok := got.Denied()
	require.True(t, ok, "want a denial at %d", index)
	require.Equal(t, index, i)
	require.Equal(t, reason, d.Reason())
	r, has := d.RetryAfter()
	require.Equal(t, hasRetry, has)
	if hasRetry {
		require.Equal(t, retry, r)
	}
}

func (m *model) clockInstant() domain.Instant {
	d := m.clock.Now()
	return domain.InstantOf(d.Truncate(time.Millisecond))
}

// verify checks every shard's storage against its invariants and the model.
func (m *model) verify() {
	t := m.t
	activeOn := make([]int, len(m.store.shards))
	for i := range modelKeys {
		s := m.store.shardOf(m.keys[i])
		if m.active(i, m.last[s]) {
			activeOn[s]++
		}
	}
	for s := range m.store.shards {
		sh := &m.store.shards[s]
		require.NoError(t, checkTable(&sh.table), "shard %d", s)
		require.LessOrEqual(t, sh.len(), sh.capacity, "shard %d", s)
		require.GreaterOrEqual(t, sh.len(), activeOn[s], "shard %d lost an active entry", s)
		if m.last[s] != math.MinInt64 {
			require.Equal(t, m.last[s], domain.Instant(sh.last.Load()), "shard %d", s)
		}
	}
}

// run interprets data as a program: three bytes of configuration, then
// operations.
func runModel(t *testing.T, data []byte) {
	if len(data) < 3 {
		return
	}
	maxKeys := 1 + int(data[0])%8
	m := newModel(t, maxKeys, 1+int(data[1])%min(3, maxKeys), 1+int(data[2])%3)
	data = data[3:]
	for len(data) > 0 {
		op, arg := data[0]%8, int(data[0]/8)
		data = data[1:]
		switch op {
		case 0, 1:
			m.clock.Advance(time.Duration(arg%4)*time.Millisecond + time.Duration(arg%3)*300*time.Microsecond)
		case 2:
			m.clock.Advance(-time.Duration(arg%3) * time.Millisecond)
		case 3, 4, 5:
			m.admit([]int{arg % modelKeys}, []int64{int64(1 + arg/modelKeys%2)})
		case 6:
			// A batch of up to four distinct keys named by the next bytes.
			var idx []int
			var costs []int64
			for n := 0; n < 1+arg%4 && len(data) > 0; n++ {
				i := int(data[0]) % modelKeys
				c := int64(1 + int(data[0])/modelKeys%2)
				data = data[1:]
				if !containsInt(idx, i) {
					idx, costs = append(idx, i), append(costs, c)
				}
			}
			if len(idx) > 0 {
				m.admit(idx, costs)
			}
		case 7:
			removed, err := m.store.CleanupExpired(context.Background(), arg%4)
			require.NoError(t, err)
			require.LessOrEqual(t, removed, arg%4)
			// Cleanup raises the time of each shard it visits, like an
			// admission, so that no later admission sees an entry it removed
			// as active again. Which shards it visits depends on the budget.
			sample := m.clockInstant()
			for s := range m.last {
				got := domain.Instant(m.store.shards[s].last.Load())
				if got != m.last[s] {
					require.Equal(t, max(m.last[s], sample), got, "shard %d", s)
					m.last[s] = got
				}
			}
		}
		m.verify()
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestStoreMatchesModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 2))
		data := make([]byte, 3+rng.IntN(120))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		runModel(t, data)
		if t.Failed() {
			t.Fatalf("program %v", data)
		}
	}
}

func FuzzStoreMatchesModel(f *testing.F) {
	f.Add([]byte{7, 2, 0, 3, 11, 19, 27, 0, 6, 1, 2, 3, 7, 15})
	f.Add([]byte{1, 0, 0, 3, 4, 8, 3, 2, 3, 12, 7})
	f.Add([]byte{5, 1, 2, 30, 54, 0, 1, 2, 3, 8, 31, 22, 6, 5, 4, 3, 2, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		runModel(t, data)
	})
}
