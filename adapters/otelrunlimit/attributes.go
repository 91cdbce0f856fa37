package otelrunlimit

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
)

// Attribute keys. Every value is bounded by the host's configuration
// (limiter and store names, policy and scope ids) or by this package
// (outcomes); none is ever a subject or a key.
const (
	// AttrLimiter is the limiter's name (app.LimiterConfig.Name, or the
	// wiring's "gate", "memory", "postgres" or "store").
	AttrLimiter = attribute.Key("runlimit.limiter")
	// AttrPolicyID is a check's policy id.
	AttrPolicyID = attribute.Key("runlimit.policy.id")
	// AttrPolicyScope is a check's scope id.
	AttrPolicyScope = attribute.Key("runlimit.policy.scope")
	// AttrOutcome is one of the Outcome constants.
	AttrOutcome = attribute.Key("runlimit.outcome")
	// AttrMayHaveConsumedQuota says whether a failed admission may have
	// consumed quota.
	AttrMayHaveConsumedQuota = attribute.Key("runlimit.may_have_consumed_quota")
	// AttrStore is a store's name, as the wiring names its stores.
	AttrStore = attribute.Key("runlimit.store")
	// AttrBatchSize is the number of checks of an admission (spans).
	AttrBatchSize = attribute.Key("runlimit.batch.size")
	// AttrPolicies lists an admission's policies as "id/scope" in caller
	// order (spans).
	AttrPolicies = attribute.Key("runlimit.policies")
	// AttrFailingIndex is the index, in caller order, of the check that
	// denied or shadow-denied an admission (spans).
	AttrFailingIndex = attribute.Key("runlimit.failing_index")
	// AttrCleanupRemoved is the number of counters a cleanup pass removed
	// (spans).
	AttrCleanupRemoved = attribute.Key("runlimit.cleanup.removed")
	// AttrErrorType is the Go type of an admission's or a cleanup's error,
	// as OpenTelemetry's error.type (spans).
	AttrErrorType = attribute.Key("error.type")
)

// Outcomes, the values of [AttrOutcome].
const (
	OutcomeAllowed        = "allowed"
	OutcomeQuotaDenied    = "quota_denied"
	OutcomeShadowDenied   = "shadow_denied"
	OutcomeCapacityDenied = "capacity_denied"
	OutcomeFailed         = "failed"
)

// outcomeOf names e's outcome: the store's error, or the decision with the
// denial's reason.
func outcomeOf(e *app.Event) string {
	switch {
	case e.Err != nil:
		return OutcomeFailed
	case e.Outcome == domain.Allowed:
		return OutcomeAllowed
	case e.Outcome == domain.ShadowDenied:
		return OutcomeShadowDenied
	case e.Reason == domain.StorageCapacity:
		return OutcomeCapacityDenied
	}
	return OutcomeQuotaDenied
}

// maxCachedAttributes bounds the check sets of an attrCache, and apart
// from them the sets of admissions and errors, so that many policies
// cannot push an error's set into the overflow. Attribute values are
// bounded by configuration, so a real host stays far below it; past it,
// measurements are recorded under the overflow set
// (otel.metric.overflow=true), as the SDK does past its own cardinality
// limit (2,000 sets per instrument by default).
const maxCachedAttributes = 2048

// attrOverflow marks the measurements past maxCachedAttributes.
const attrOverflow = attribute.Key("otel.metric.overflow")

// attrKey identifies a measurement's attributes: a check's (limiter,
// policy, scope, outcome), an admission's (limiter, outcome) or an
// error's (limiter, whether quota may have been consumed).
type attrKey struct {
	limiter, policy, scope string
	outcome                string
	consumed               bool
}

// measurement holds the options of one attribute set, built once: passing
// a prepared slice to Add and Record allocates nothing per measurement. A
// check's set also holds its count of runlimit.admissions, which the
// meter reads at collection: adding to it costs an atomic add, where the
// SDK's Add resolves the attribute set again on every call.
type measurement struct {
	add     []metric.AddOption
	record  []metric.RecordOption
	observe []metric.ObserveOption
	count   *atomic.Int64 // a check's count; nil for other sets
}

// attrCache maps attribute keys to prepared measurements. Reads are
// lock-free: a miss copies the map under a lock, which happens once per
// key.
type attrCache struct {
	m        atomic.Pointer[map[attrKey]measurement]
	mu       sync.Mutex
	checks   int // check sets in m
	overflow measurement
}

func newAttrCache() *attrCache {
	c := &attrCache{}
	c.overflow = newMeasurement(attribute.NewSet(attrOverflow.Bool(true)), true)
	return c
}

// get returns k's measurement.
func (c *attrCache) get(k attrKey) measurement {
	if m := c.m.Load(); m != nil {
		if o, ok := (*m)[k]; ok {
			return o
		}
	}
	return c.add(k)
}

func (c *attrCache) add(k attrKey) measurement {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if prev, ok := (*old)[k]; ok {
			return prev // another goroutine added it first
		}
		n := c.checks // the sets of k's kind
		if k.policy == "" {
			n = len(*old) - c.checks
		}
		if n >= maxCachedAttributes {
			return c.overflow
		}
	}
	next := make(map[attrKey]measurement, 1+mapLen(old))
	if old != nil {
		for key, v := range *old {
			next[key] = v
		}
	}
	o := newMeasurement(k.set(), k.policy != "")
	next[k] = o
	c.m.Store(&next)
	if k.policy != "" {
		c.checks++
	}
	return o
}

// counts calls f with each check's count and its options, the overflow's
// last when it has counted anything.
func (c *attrCache) counts(f func(n int64, opts []metric.ObserveOption)) {
	if m := c.m.Load(); m != nil {
		for _, v := range *m {
			if v.count != nil {
				f(v.count.Load(), v.observe)
			}
		}
	}
	if n := c.overflow.count.Load(); n > 0 {
		f(n, c.overflow.observe)
	}
}

func mapLen(m *map[attrKey]measurement) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// set builds the attribute set k stands for, leaving out the parts k does
// not use.
func (k attrKey) set() attribute.Set {
	switch {
	case k.policy != "":
		return attribute.NewSet(AttrLimiter.String(k.limiter), AttrPolicyID.String(k.policy),
			AttrPolicyScope.String(k.scope), AttrOutcome.String(k.outcome))
	case k.outcome != "":
		return attribute.NewSet(AttrLimiter.String(k.limiter), AttrOutcome.String(k.outcome))
	}
	return attribute.NewSet(AttrLimiter.String(k.limiter), AttrMayHaveConsumedQuota.Bool(k.consumed))
}

func newMeasurement(set attribute.Set, counted bool) measurement {
	opt := metric.WithAttributeSet(set)
	m := measurement{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}, observe: []metric.ObserveOption{opt}}
	if counted {
		m.count = new(atomic.Int64)
	}
	return m
}
