package redisstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// maxCapacity keeps the capacity a number Lua compares exactly.
const maxCapacity = 1 << 53

// MaxPartitions is the most capacity partitions a store may have.
const MaxPartitions = 256

// ErrConfig is returned by [New] for a configuration outside its bounds.
// It matches [ports.ErrInvalidConfig].
var ErrConfig = fmt.Errorf("%w: redisstore needs a client, a prefix, a capacity of 1 to 2^53 and 0 to 256 partitions", ports.ErrInvalidConfig)

// Config configures a [Store].
type Config struct {
	// Client reaches the Redis server. The store never closes it. Required.
	Client redis.UniversalClient
	// Prefix starts every key the store writes; stores with the same prefix
	// on one server share their counters, as replicas of a service do.
	// Required.
	Prefix string
	// Capacity is the most counters each capacity partition holds, expired
	// ones not yet removed included. Required, 1 to 2^53.
	Capacity int64
	// Partitions is the number of capacity partitions (see
	// [Store.PartitionOf]). Every store over one prefix must use the same
	// number. Default 1, at most [MaxPartitions].
	Partitions int
	// MaxBatchSize is the largest batch Admit accepts. Default 32
	// ([domain.DefaultMaxBatchSize]).
	MaxBatchSize int
}

// Store is a Runlimit store over Redis. It is safe for concurrent use, and
// any number of Stores with one prefix on one server, in any number of
// processes, share their counters, capacity and clock floor.
type Store struct {
	client   redis.UniversalClient
	counter  string   // the prefix of counter keys
	counts   []string // each partition's count of stored counters
	indexes  []string // each partition's index
	floor    string
	capacity int64 // per partition
	maxBatch int
	closed   atomic.Bool
}

var (
	_ ports.Store            = (*Store)(nil)
	_ ports.CheckAdmitter    = (*Store)(nil)
	_ ports.Cleaner          = (*Store)(nil)
	_ ports.StatsReporter    = (*Store)(nil)
	_ ports.ReadinessChecker = (*Store)(nil)
	_ ports.Closer           = (*Store)(nil)
)

// New returns a store over cfg.Client under cfg.Prefix.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil || cfg.Prefix == "" || cfg.Capacity < 1 || cfg.Capacity > maxCapacity ||
		cfg.Partitions < 0 || cfg.Partitions > MaxPartitions {
		return nil, ErrConfig
	}
	if cfg.MaxBatchSize < 1 {
		cfg.MaxBatchSize = domain.DefaultMaxBatchSize
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 1
	}
	p := cfg.Prefix
	s := &Store{client: cfg.Client, counter: p + "c:", floor: p + "t", capacity: cfg.Capacity, maxBatch: cfg.MaxBatchSize}
	for i := range cfg.Partitions {
		s.counts = append(s.counts, p+"n:"+strconv.Itoa(i))
		s.indexes = append(s.indexes, p+"i:"+strconv.Itoa(i))
	}
	return s, nil
}

// PartitionOf returns the capacity partition of k: the first eight bytes
// of its fingerprint XOR those of its subject key, modulo the number of
// partitions. Every process computes the same partition for a key.
func (s *Store) PartitionOf(k domain.CounterKey) int {
	b := k.Bytes()
	return s.partitionOf(string(b[:]))
}

// partitionOf is PartitionOf for a key's bytes.
func (s *Store) partitionOf(raw string) int {
	x := binary.BigEndian.Uint64([]byte(raw[:8])) ^ binary.BigEndian.Uint64([]byte(raw[32:40]))
	return int(x % uint64(len(s.counts)))
}

// Error reports an operation the store could not complete. It never holds
// a key.
type Error struct {
	Op       string // "admit", "cleanup", "stats" or "ready"
	Err      error
	consumed bool
}

func (e *Error) Error() string { return "redisstore: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// MayHaveConsumedQuota reports whether the write script may have run: only
// an admission whose write failed on the way may have consumed.
func (e *Error) MayHaveConsumedQuota() bool { return e.consumed }

// Admit applies b atomically (see the package documentation).
func (s *Store) Admit(ctx context.Context, b *domain.Batch) error {
	if err := b.Ready(); err != nil {
		return err
	}
	if ctx == nil {
		return ports.ErrNilContext
	}
	if s.closed.Load() {
		return ports.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return &Error{Op: "admit", Err: err}
	}
	if n := b.Len(); n > s.maxBatch {
		return &domain.BatchError{Problem: domain.BatchTooLarge, Size: n, Max: s.maxBatch}
	}
	return s.admit(ctx, b)
}

// AdmitCheck applies one check through Admit's flow, as a batch of one.
func (s *Store) AdmitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	var b domain.Batch
	if err := b.ResetSingle(&c); err != nil {
		return domain.Decision{}, err
	}
	if err := s.Admit(ctx, &b); err != nil {
		return domain.Decision{}, err
	}
	d, _, err := b.DecisionOf(0)
	if err != nil {
		return domain.Decision{}, err
	}
	return d, nil
}

// snapshot is what one read script saw, at one time. The batch's
// partitions are numbered in the order its keys first name them.
type snapshot struct {
	now         domain.Instant
	stored      []int64 // per partition of the batch
	earliest    []domain.Instant
	hasEarliest []bool
	values      []string // each key's text, "" when absent
}

// plan is a batch's keys as the scripts take them.
type plan struct {
	raw   []string // each key's bytes
	slot  []int    // each key's partition, numbered as in snapshot
	parts []int    // the store's partition of each numbered one
	keys  []string // the read script's: floor, (count, index) per partition, counters
}

func (s *Store) plan(b *domain.Batch) *plan {
	n := b.Len()
	p := &plan{raw: make([]string, n), slot: make([]int, n)}
	for i := range n {
		bs := b.Key(i).Bytes()
		p.raw[i] = string(bs[:])
		part := s.partitionOf(p.raw[i])
		p.slot[i] = -1
		for j, q := range p.parts {
			if q == part {
				p.slot[i] = j
			}
		}
		if p.slot[i] < 0 {
			p.slot[i] = len(p.parts)
			p.parts = append(p.parts, part)
		}
	}
	p.keys = append(p.keys, s.floor)
	for _, part := range p.parts {
		p.keys = append(p.keys, s.counts[part], s.indexes[part])
	}
	for _, r := range p.raw {
		p.keys = append(p.keys, s.counter+r)
	}
	return p
}

func (s *Store) admit(ctx context.Context, b *domain.Batch) error {
	n := b.Len()
	checks := make([]domain.Check, n)
	for i := range n {
		checks[i] = b.Check(i)
	}
	p := s.plan(b)
	obs := make([]domain.Observation, n)
	for {
		if err := ctx.Err(); err != nil {
			return &Error{Op: "admit", Err: err}
		}
		snap, err := s.read(ctx, p)
		if err != nil {
			return &Error{Op: "admit", Err: err}
		}
		claimed, err := s.observe(&snap, p, obs)
		if err != nil {
			return &Error{Op: "admit", Err: err}
		}
		// A Batch is evaluated once: each attempt evaluates a scratch copy,
		// and the attempt that stands is replayed on b.
		scratch, err := domain.NewBatch(checks, n)
		if err != nil {
			return err
		}
		for i := range obs {
			scratch.Observe(i, obs[i])
		}
		commit, err := scratch.Evaluate(snap.now)
		if err != nil {
			return &Error{Op: "admit", Err: err}
		}
		if commit {
			if err := ctx.Err(); err != nil {
				return &Error{Op: "admit", Err: err}
			}
			ok, err := s.write(ctx, p, &snap, scratch, claimed)
			if err != nil {
				return &Error{Op: "admit", Err: err, consumed: true}
			}
			if !ok {
				continue
			}
		}
		for i := range obs {
			b.Observe(i, obs[i])
		}
		if _, err := b.Evaluate(snap.now); err != nil {
			return &Error{Op: "admit", Err: err, consumed: commit}
		}
		return nil
	}
}

// observe fills obs from snap: each key's counter, and whether a new key
// finds a free slot in its partition, claimed in caller order. It returns
// the slots claimed in each of the batch's partitions.
func (s *Store) observe(snap *snapshot, p *plan, obs []domain.Observation) ([]int64, error) {
	claimed := make([]int64, len(p.parts))
	for i, v := range snap.values {
		o := domain.Observation{}
		j := p.slot[i]
		if v == "" {
			if claimed[j] < s.capacity-snap.stored[j] {
				claimed[j]++
			} else {
				o.Full = true
				o.EarliestExpiry, o.HasEarliestExpiry = snap.earliest[j], snap.hasEarliest[j]
			}
		} else {
			c, ok := parseCounter(v)
			if !ok {
				return nil, &domain.CorruptCounterError{Index: i}
			}
			o.Counter = c
		}
		obs[i] = o
	}
	return claimed, nil
}

// read runs readScript: every key's text, each partition's count of
// stored counters and earliest expiry, and the clock, in one step.
func (s *Store) read(ctx context.Context, p *plan) (snapshot, error) {
	m := len(p.parts)
	reply, err := readScript.Run(ctx, s.client, p.keys, m).StringSlice()
	if err != nil {
		return snapshot{}, err
	}
	if len(reply) != 1+2*m+len(p.raw) {
		return snapshot{}, errors.New("read script: unexpected reply")
	}
	snap := snapshot{stored: make([]int64, m), earliest: make([]domain.Instant, m), hasEarliest: make([]bool, m)}
	var ok bool
	if snap.now, ok = parseInstant(reply[0]); !ok {
		return snapshot{}, errors.New("read script: unreadable clock")
	}
	for j := range m {
		if snap.stored[j], err = strconv.ParseInt(reply[1+2*j], 10, 64); err != nil {
			return snapshot{}, errors.New("read script: unreadable count")
		}
		if e := reply[2+2*j]; e != "" {
			if snap.earliest[j], ok = parseInstant(e); !ok {
				return snapshot{}, errors.New("read script: unreadable index")
			}
			snap.hasEarliest[j] = true
		}
	}
	snap.values = reply[1+2*m:]
	return snap, nil
}

// write runs writeScript: the batch's new counters, applied only if every
// key still holds the text snap read and the claimed slots are still free.
func (s *Store) write(ctx context.Context, p *plan, snap *snapshot, b *domain.Batch, claimed []int64) (bool, error) {
	args := make([]any, 0, 2+len(claimed)+5*len(p.raw))
	args = append(args, len(claimed), s.capacity)
	for _, c := range claimed {
		args = append(args, c)
	}
	for i, v := range snap.values {
		next := b.Next(i)
		var old string
		if v != "" {
			c, _ := parseCounter(v)
			old = member(c.Expires, p.raw[i])
		}
		args = append(args, p.slot[i]+1, v, formatCounter(next), old, member(next.Expires, p.raw[i]))
	}
	r, err := writeScript.Run(ctx, s.client, p.keys[1:], args...).Int()
	return r == 1, err
}

// CleanupExpired removes at most max expired counters, earliest expiry
// first in each partition, in one script that reads the clock and frees
// their slots.
func (s *Store) CleanupExpired(ctx context.Context, max int) (int, error) {
	switch {
	case max < 0:
		return 0, ports.ErrNegativeMax
	case ctx == nil:
		return 0, ports.ErrNilContext
	case s.closed.Load():
		return 0, ports.ErrClosed
	case max == 0:
		return 0, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, &Error{Op: "cleanup", Err: err}
	}
	keys := []string{s.floor}
	for i := range s.counts {
		keys = append(keys, s.counts[i], s.indexes[i])
	}
	// The script counts down from max in float64: 2^53 is beyond any
	// number of counters, and still exact.
	n, err := cleanupScript.Run(ctx, s.client, keys, min(int64(max), maxCapacity), s.counter).Int()
	if err != nil {
		return 0, &Error{Op: "cleanup", Err: err}
	}
	return n, nil
}

// Stats reports the store's occupancy, by partition.
func (s *Store) Stats(ctx context.Context) (ports.Stats, error) {
	if ctx == nil {
		return ports.Stats{}, ports.ErrNilContext
	}
	if s.closed.Load() {
		return ports.Stats{}, ports.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return ports.Stats{}, &Error{Op: "stats", Err: err}
	}
	counts, err := s.client.MGet(ctx, s.counts...).Result()
	if err != nil {
		return ports.Stats{}, &Error{Op: "stats", Err: err}
	}
	st := ports.Stats{Capacity: s.capacity * int64(len(s.counts)), Shards: len(s.counts), Headroom: make([]int64, len(s.counts))}
	for i, v := range counts {
		var n int64
		if text, ok := v.(string); ok {
			if n, err = strconv.ParseInt(text, 10, 64); err != nil {
				return ports.Stats{}, &Error{Op: "stats", Err: errors.New("unreadable count")}
			}
		}
		st.Entries += n
		st.Headroom[i] = s.capacity - n
	}
	return st, nil
}

// Ready reports whether the server answers.
func (s *Store) Ready(ctx context.Context) error {
	if ctx == nil {
		return ports.ErrNilContext
	}
	if s.closed.Load() {
		return ports.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return &Error{Op: "ready", Err: err}
	}
	if err := s.client.Ping(ctx).Err(); err != nil {
		return &Error{Op: "ready", Err: err}
	}
	return nil
}

// Close makes every later call fail with [ports.ErrClosed]. It leaves the
// client, which the caller owns, and the counters, which other stores over
// the prefix share, as they are.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// parseInstant reads a time as the scripts and formatInstant write it.
func parseInstant(v string) (domain.Instant, bool) {
	i, err := strconv.ParseInt(v, 10, 64)
	return domain.Instant(i), err == nil
}

// formatInstant writes a time as 20 decimal digits, so that byte order is
// time order. Times before this store's epoch cannot be written so.
func formatInstant(i domain.Instant) string {
	return fmt.Sprintf("%020d", int64(i))
}

// member is a counter's entry in the index: its expiry, ":" and its key.
func member(expires domain.Instant, raw string) string {
	return formatInstant(expires) + ":" + raw
}

func formatCounter(c domain.Counter) string {
	return strconv.FormatInt(c.Used, 10) + ":" + formatInstant(c.Start) + ":" + formatInstant(c.Expires)
}

func parseCounter(v string) (domain.Counter, bool) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return domain.Counter{}, false
	}
	used, err1 := strconv.ParseInt(parts[0], 10, 64)
	start, ok2 := parseInstant(parts[1])
	expires, ok3 := parseInstant(parts[2])
	if err1 != nil || !ok2 || !ok3 || used < 1 || expires <= start {
		return domain.Counter{}, false
	}
	return domain.Counter{Used: used, Start: start, Expires: expires}, true
}
