package conformance

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// oplog records every operation a case applies to its fresh store, with
// names for its policies and keys (never key bytes), so that a failure can
// print the sequence that shows it. Each case starts from an empty store
// and applies only a handful of operations, so the log is the reproduction.
type oplog struct {
	mu       sync.Mutex
	lines    []string
	ops      int
	elapsed  time.Duration // the sum of advances so far
	keys     map[domain.SubjectKey]string
	made     []domain.SubjectKey // keys, in the order the case made them
	index    *keyIndex           // the forms of made's first keys, made by keyLeak
	policies map[domain.Fingerprint]string
}

func newOplog() *oplog {
	return &oplog{keys: make(map[domain.SubjectKey]string), policies: make(map[domain.Fingerprint]string)}
}

func (l *oplog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops++
	l.lines = append(l.lines, fmt.Sprintf("%3d. t+%-10v ", l.ops, l.elapsed)+fmt.Sprintf(format, args...))
}

func (l *oplog) advanced(d time.Duration) {
	l.mu.Lock()
	l.elapsed += d
	l.mu.Unlock()
	l.add("advance %v", d)
}

// String returns the log, one operation a line.
func (l *oplog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return "  (no operations)"
	}
	return strings.Join(l.lines, "\n")
}

// nameKey names a key the case made, in the order it made them.
func (l *oplog) nameKey(k domain.SubjectKey, part int, parts int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := fmt.Sprintf("k%d", len(l.keys)+1)
	if parts > 1 {
		name += fmt.Sprintf("@p%d", part)
	}
	if _, ok := l.keys[k]; !ok {
		l.made = append(l.made, k)
	}
	l.keys[k] = name
}

// namePolicy names a policy the case made.
func (l *oplog) namePolicy(p domain.Policy) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.policies[p.Fingerprint()]; ok {
		return
	}
	name := fmt.Sprintf("P%d", len(l.policies)+1)
	l.policies[p.Fingerprint()] = name
	l.lines = append(l.lines, fmt.Sprintf("     %s = policy %s/%s, limit %d, window %v", name, p.ID(), p.Scope(), p.Limit(), p.Window()))
}

// check names a check: policy, key, cost when not 1, and shadow mode.
func (l *oplog) check(c domain.Check) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := c.Policy()
	pn, ok := l.policies[p.Fingerprint()]
	if !ok {
		pn = "P?"
	}
	kn, ok := l.keys[c.SubjectKey()]
	if !ok {
		kn = "k?"
	}
	s := pn + "/" + kn
	if c.Cost() != 1 {
		s += fmt.Sprintf(" cost %d", c.Cost())
	}
	if p.Mode() == domain.Shadow {
		s += " (shadow)"
	}
	return s
}

func (l *oplog) batch(checks []domain.Check) string {
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = l.check(c)
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// describeStats prints occupancy: entries, and the headroom of every
// partition that is not empty.
func describeStats(s ports.Stats, capacity int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "entries %d of %d", s.Entries, s.Capacity)
	var used []string
	for i, h := range s.Headroom {
		if h != int64(capacity) {
			used = append(used, fmt.Sprintf("p%d:%d", i, h))
		}
	}
	if len(s.Headroom) > 1 || len(used) > 0 {
		if len(used) == 0 {
			used = []string{"every partition empty"}
		}
		fmt.Fprintf(&b, ", headroom %s", strings.Join(used, " "))
	}
	return b.String()
}

// describe prints a decision for a failure message. Decisions never hold
// key bytes.
func describe(d domain.Decision) string {
	if a, ok := d.Allowance(); ok {
		return fmt.Sprintf("allowed (limit %d, remaining %d, reset after %v)", a.Limit, a.Remaining, a.ResetAfter)
	}
	den, ok := d.Denial()
	if !ok {
		return "no decision"
	}
	retry, has := den.RetryAfter()
	if !has {
		return fmt.Sprintf("%s (%s, no retry time)", d.Outcome(), den.Reason())
	}
	return fmt.Sprintf("%s (%s, retry after %v)", d.Outcome(), den.Reason(), retry)
}

// describeBatch prints a batch decision for a failure message.
func describeBatch(bd domain.BatchDecision) string {
	if i, _, ok := bd.Denied(); ok {
		d, _ := bd.Decision(i)
		return fmt.Sprintf("%s at check %d of %d: %s", bd.Outcome(), i, bd.Size(), describe(d))
	}
	var rem []string
	for _, d := range bd.Decisions() {
		a, _ := d.Allowance()
		rem = append(rem, fmt.Sprintf("%d", a.Remaining))
	}
	return fmt.Sprintf("%s, %d decisions, remaining [%s]", bd.Outcome(), len(bd.Decisions()), strings.Join(rem, " "))
}
