package conformance

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/ports"
)

// Capability names an optional interface of package ports that a store may
// implement, for [Instance.Require].
type Capability string

// The optional capabilities the suite knows and exercises.
const (
	// CheckAdmitter: [ports.CheckAdmitter], the single-check path.
	CheckAdmitter Capability = "ports.CheckAdmitter"
	// Cleaner: [ports.Cleaner].
	Cleaner Capability = "ports.Cleaner"
	// StatsReporter: [ports.StatsReporter].
	StatsReporter Capability = "ports.StatsReporter"
	// Closer: [ports.Closer].
	Closer Capability = "ports.Closer"
)

// allCapabilities lists them in the order the summary prints them.
var allCapabilities = []Capability{CheckAdmitter, Cleaner, StatsReporter, Closer}

// capabilities is what the harness subtest learned about the store.
type capabilities struct {
	has   map[Capability]bool
	parts int
	clock bool
	exact bool
	// replicas: the harness can open a second replica over a store's data
	// (Instance.OpenReplica).
	replicas bool
}

func capabilitiesOf(s ports.Store) map[Capability]bool {
	has := make(map[Capability]bool)
	_, has[CheckAdmitter] = s.(ports.CheckAdmitter)
	_, has[Cleaner] = s.(ports.Cleaner)
	_, has[StatsReporter] = s.(ports.StatsReporter)
	_, has[Closer] = s.(ports.Closer)
	return has
}

// paths returns the single-check paths the store offers: always a batch of
// one through Admit, and AdmitCheck when the store implements it.
func (c capabilities) paths() []path {
	if c.has[CheckAdmitter] {
		return []path{viaAdmitCheck, viaBatchOfOne}
	}
	return []path{viaBatchOfOne}
}

// path is the way the fixture applies a single check. The choice is the
// fixture's, made explicitly on every check: a store that offers
// AdmitCheck must be proven on both paths, since production takes
// AdmitCheck for every single check and Admit for every batch.
type path uint8

const (
	// viaBatchOfOne applies a single check as a batch of one through Admit,
	// the way a limiter does for a store without a single-check path.
	viaBatchOfOne path = iota
	// viaAdmitCheck applies it through ports.CheckAdmitter.
	viaAdmitCheck
)

func (p path) String() string {
	if p == viaAdmitCheck {
		return "AdmitCheck"
	}
	return "batch_of_one"
}

// probe builds one store to check the Instance and learn what the store
// offers; every case's store must offer the same.
func probe(t *testing.T, newStore NewStoreFunc) capabilities {
	t.Helper()
	inst := newStore(t, defaultOptions)
	checkInstance(t, inst)
	caps := capabilities{
		has: capabilitiesOf(inst.Store), parts: 1, clock: inst.Clock != nil, exact: inst.ExactTime || inst.Clock != nil,
		replicas: inst.OpenReplica != nil,
	}
	for _, c := range inst.Require {
		require.True(t, caps.has[c], "harness: Instance.Require lists %s, but the store (%T) does not implement it; "+
			"a wrapper around the store may be hiding it", c, inst.Store)
	}
	if sr, ok := inst.Store.(ports.StatsReporter); ok {
		var s ports.Stats
		returned, err := boundedGuard(func() (err error) {
			s, err = sr.Stats(t.Context())
			return err
		})
		require.True(t, returned, "harness: %s: Stats on a fresh store has not returned after %v", blockedRule, callBound)
		require.NoError(t, err, "harness: Stats on a fresh store")
		require.Positive(t, s.Shards, "harness: Stats.Shards of a fresh store")
		if inst.Partitions > 0 {
			require.Equal(t, inst.Partitions, s.Shards, "harness: Instance.Partitions disagrees with Stats.Shards")
		}
		caps.parts = s.Shards
	} else if inst.Partitions > 0 {
		caps.parts = inst.Partitions
	}
	require.True(t, caps.parts == 1 || inst.PartitionOf != nil,
		"harness: the store has %d capacity partitions; set Instance.PartitionOf so that the suite can aim keys at one "+
			"partition and check its bound exactly", caps.parts)

	if inst.OpenReplica != nil {
		replica := inst.OpenReplica(t)
		require.NotNil(t, replica, "harness: Instance.OpenReplica returned no store")
		require.Equal(t, caps.has, capabilitiesOf(replica),
			"harness: the replica Instance.OpenReplica opened (%T) offers other optional capabilities than Store (%T)", replica, inst.Store)
	}
	if c, ok := inst.Store.(ports.Closer); ok {
		returned, err := boundedGuard(c.Close)
		require.True(t, returned, "harness: %s: Close on a fresh store has not returned after %v", blockedRule, callBound)
		require.NoError(t, err, "harness: Close on a fresh store")
	}
	replicas := "no second replica (Instance.OpenReplica is nil)"
	if caps.replicas {
		replicas = "a second replica over its data (Instance.OpenReplica)"
	}
	t.Logf("conformance: the store (%T) has %d capacity partition(s), %s clock, %s, and offers %s",
		inst.Store, caps.parts, clockKind(caps), replicas, caps.list(true))
	return caps
}

// checkInstance fails t when inst is not usable.
func checkInstance(t *testing.T, inst Instance) {
	t.Helper()
	require.NotNil(t, inst.Store, "harness: NewStoreFunc returned an Instance without a Store")
	require.True(t, inst.Advance != nil || inst.Clock != nil,
		"harness: NewStoreFunc returned an Instance with neither Advance nor Clock: the suite cannot move the store's time")
	require.GreaterOrEqual(t, inst.Partitions, 0, "harness: Instance.Partitions is negative")
}

func clockKind(c capabilities) string {
	switch {
	case c.clock:
		return "a ManualClock (Instance.Clock)"
	case c.exact:
		return "an exact (ExactTime)"
	}
	return "a running"
}

// list names the capabilities the store has (or lacks).
func (c capabilities) list(has bool) string {
	var names []string
	for _, cap := range allCapabilities {
		if c.has[cap] == has {
			names = append(names, string(cap))
		}
	}
	if len(names) == 0 {
		return "none of the optional capabilities"
	}
	return strings.Join(names, ", ")
}

// report counts the calls the suite made to each capability across every
// case of one Run.
type report struct {
	caps    capabilities
	total   int64
	started atomic.Int64
	// skipped counts the cases that started and found they do not apply
	// to the store (t.Skip): a store over a server's clock skips every
	// case that needs a clock the suite moves exactly or steps back.
	skipped atomic.Int64
	// reasons counts the skipped cases by the reason each gave
	// (fixture.skip), for the summary.
	reasonsMu sync.Mutex
	reasons   map[string]int64
	calls     map[Capability]*atomic.Int64
	admits    atomic.Int64
	// replicas counts the replicas the cases opened; replicaCases counts
	// the cases that need one.
	replicas     atomic.Int64
	replicaCases int64
	// blocked is set once a call into the store has blocked past
	// callBound.
	blocked atomic.Bool
}

func newReport(caps capabilities) *report {
	r := &report{caps: caps, total: caseCount(caps), replicaCases: replicaCaseCount(caps), calls: make(map[Capability]*atomic.Int64)}
	for _, c := range allCapabilities {
		r.calls[c] = new(atomic.Int64)
	}
	return r
}

func (r *report) called(c Capability) { r.calls[c].Add(1) }

// skip records the reason a case gave for skipping.
func (r *report) skip(reason string) {
	r.reasonsMu.Lock()
	defer r.reasonsMu.Unlock()
	if r.reasons == nil {
		r.reasons = make(map[string]int64)
	}
	r.reasons[reason]++
}

// skipReasons lists the reasons cases skipped for, one a line, the most
// frequent first, each with how many cases gave it.
func (r *report) skipReasons() string {
	r.reasonsMu.Lock()
	defer r.reasonsMu.Unlock()
	type reason struct {
		text string
		n    int64
	}
	var rs []reason
	var listed int64
	for text, n := range r.reasons {
		rs = append(rs, reason{text, n})
		listed += n
	}
	slices.SortFunc(rs, func(a, b reason) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.text, b.text))
	})
	var b strings.Builder
	for _, x := range rs {
		fmt.Fprintf(&b, "\n%4d× %s", x.n, x.text)
	}
	if other := r.skipped.Load() - listed; other > 0 {
		fmt.Fprintf(&b, "\n%4d× for reasons go test -v shows", other)
	}
	return b.String()
}

// summarize logs what the run exercised and, when every case ran, fails t
// for a capability the store offers that no case called: the suite would
// have passed it without looking.
func (r *report) summarize(t *testing.T) {
	t.Helper()
	t.Log(r.summary())
	if r.started.Load() != r.total || t.Failed() {
		return
	}
	for _, c := range allCapabilities {
		if r.caps.has[c] && r.calls[c].Load() == 0 {
			t.Errorf("conformance: the store offers %s but no case called it: the suite did not exercise it", c)
		}
	}
	if r.caps.replicas && r.replicas.Load() == 0 {
		t.Errorf("conformance: the harness offers Instance.OpenReplica but no case opened a replica: the suite did not exercise it")
	}
}

// summary says how many cases ran, how many of them were skipped, and how
// often each capability was called.
func (r *report) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "conformance: %d of %d cases ran", r.started.Load(), r.total)
	if n := r.skipped.Load(); n > 0 {
		// A passing run is no proof of the guarantees these cases check:
		// say so where the author reads the result, not only under -v.
		fmt.Fprintf(&b, ", %d of them skipped as not applicable to this store (review what they check by hand; "+
			"go test -v names each)", n)
	}
	fmt.Fprintf(&b, "; Admit was called %d times", r.admits.Load())
	for _, c := range allCapabilities {
		if r.caps.has[c] {
			fmt.Fprintf(&b, ", %s %d times", c, r.calls[c].Load())
		}
	}
	if r.caps.replicas {
		fmt.Fprintf(&b, ", Instance.OpenReplica %d times", r.replicas.Load())
	}
	if missing := r.caps.list(false); missing != "none of the optional capabilities" {
		fmt.Fprintf(&b, "; the store does not offer %s, whose cases were skipped", missing)
	}
	if !r.caps.replicas {
		// As with a skipped case: a passing run proves nothing about a
		// store that several replicas share.
		fmt.Fprintf(&b, "; Instance.OpenReplica is nil, so the %d replica cases were skipped and did not exercise "+
			"two replicas over one backend (shared counts, capacity bound, locks, cleanup, clock)", r.replicaCases)
	}
	if r.skipped.Load() > 0 {
		b.WriteString("\nskipped cases, by reason:")
		b.WriteString(r.skipReasons())
	}
	return b.String()
}
