package brokenstores

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// textKey is the key KeysDropControlBytes and KeysFoldBase64Case keep k's
// counter under: a digest of the text key the fault builds. Its first
// bytes of fingerprint and subject key keep k's partition, as reducedKey's
// do.
func (s *Store) textKey(k domain.CounterKey) domain.CounterKey {
	b := k.Bytes()
	var text string
	switch s.cfg.Fault {
	case KeysDropControlBytes:
		// The defect: a memcached key may hold no control character or
		// space, and the port drops them rather than encode them.
		var sb strings.Builder
		for _, c := range b {
			if c > ' ' && c != 0x7f {
				sb.WriteByte(c)
			}
		}
		text = sb.String()
	case KeysFoldBase64Case:
		// The defect: base64 is case-sensitive, the column is not.
		text = strings.ToLower(base64.StdEncoding.EncodeToString(b[:]))
	}
	sub := sha256.Sum256([]byte(text))
	var fp domain.Fingerprint
	fp[0] = b[0] ^ b[32] ^ sub[0]
	return domain.NewCounterKey(fp, domain.SubjectKeyFromBytes(sub))
}

// joinedClock reads d, the clock's time since the store's epoch, as
// ClockJoinsSecondsAndMicros does: the whole seconds and the microseconds
// of the second, each printed in decimal and joined, without padding the
// microseconds to six digits.
func joinedClock(d time.Duration) domain.Instant {
	secs := int64(d / time.Second)
	micros := int64(d%time.Second) / int64(time.Microsecond)
	if secs == 0 {
		return domain.Instant(micros)
	}
	joined, err := strconv.ParseInt(strconv.FormatInt(secs, 10)+strconv.FormatInt(micros, 10), 10, 64)
	if err != nil {
		return domain.InstantOf(d)
	}
	return domain.Instant(joined)
}

// removeSkipping is CleanupExpired's removal for CleanupSkipsAfterRemoval:
// it walks the expired counters, earliest expiry first, and after each it
// removes steps over the next, as an index loop over a slice it deletes
// from does. The caller holds s.mu.
func (s *Store) removeSkipping(now domain.Instant, max int) int {
	type candidate struct {
		k domain.CounterKey
		e domain.Instant
	}
	var cs []candidate
	for k, c := range s.entries {
		if c.Expires <= now {
			cs = append(cs, candidate{k, c.Expires})
		}
	}
	slices.SortFunc(cs, func(a, b candidate) int { return int(a.e - b.e) })
	removed := 0
	for i := 0; i < len(cs) && removed < max; i++ {
		if s.tryRemove(cs[i].k, false) {
			removed++
			i++ // the defect: the next candidate slid into the removed one's place
		}
	}
	return removed
}

// refund is one step of BatchStepsPerKeyWithRefund to take back: the key
// it wrote and what the key held before.
type refund struct {
	k       domain.CounterKey
	before  domain.Counter
	present bool
}

// admitPerKey is Admit for BatchStepsPerKeyWithRefund: each check of b is
// admitted on its own, under its own key's lock, and once one is refused
// the earlier ones are taken back. The decision is then b's, evaluated on
// what each step read.
func (s *Store) admitPerKey(ctx context.Context, b *domain.Batch) error {
	n := b.Len()
	obs := make([]domain.Observation, n)
	var (
		undo []refund
		now  domain.Instant
	)
	for i := range n {
		c := b.Check(i)
		var (
			next domain.Counter
			d    domain.Decision
		)
		a := &admission{s: s, ctx: ctx, n: 1, mode: c.Policy().Mode(), check: func(int) domain.Check { return c }}
		a.keys = []domain.CounterKey{s.storageKey(c)}
		a.evaluate = func(t domain.Instant) (bool, error) {
			now = t
			return domain.EvaluateCheck(&c, t, &a.obs[0], &next, &d)
		}
		a.next = func(int) domain.Counter { return next }
		a.denied = func() (int, domain.Outcome) { return 0, d.Outcome() }
		if err := a.run(); err != nil {
			s.takeBack(undo)
			return err
		}
		obs[i] = a.obs[0]
		if d.Outcome() != domain.Allowed {
			// The defect: the earlier steps stood until now.
			s.takeBack(undo)
			break
		}
		undo = append(undo, refund{a.keys[0], a.before[0], a.present[0]})
	}
	for i, o := range obs {
		b.Observe(i, o)
	}
	if _, err := b.Evaluate(now); err != nil {
		return &Error{Op: "admit", Err: err}
	}
	return nil
}

// takeBack restores what steps wrote, the latest first, each under its
// key's lock.
func (s *Store) takeBack(steps []refund) {
	for i := len(steps) - 1; i >= 0; i-- {
		u := steps[i]
		s.keyMu.Lock()
		l, ok := s.keyLocks[u.k]
		if !ok {
			l = new(sync.Mutex)
			s.keyLocks[u.k] = l
		}
		s.keyMu.Unlock()
		l.Lock()
		s.mu.Lock()
		if u.present {
			s.entries[u.k] = u.before
			s.versions[u.k]++
		} else if _, ok := s.entries[u.k]; ok {
			delete(s.entries, u.k)
			delete(s.firstExpiry, u.k)
			delete(s.versions, u.k)
			s.stored[s.PartitionOf(u.k)]--
			s.removeIndex(u.k)
		}
		s.mu.Unlock()
		l.Unlock()
	}
}
