// Package otelrunlimit exports what Runlimit does as OpenTelemetry metrics
// and spans: admissions by policy and outcome, their latency, failures,
// each store's headroom and the cleanup loop's work. Attributes are
// limiter and store names, policy and scope ids and outcomes, all bounded
// by configuration: never a subject, a key or a secret. A host that does
// not import this package links nothing of OpenTelemetry.
//
// # With the fx module
//
// [github.com/runlimit/runlimit/app/runlimitfx] uses this package by
// itself: give the fx graph a metric.MeterProvider (and, for spans, a
// trace.TracerProvider), or set the global providers before the
// application is built, and every admission, cleanup pass and store is
// observed.
//
// # With the wiring
//
// Build a [Telemetry] and hand it to the wiring's config, then watch the
// Runtime's stores:
//
//	telemetry, err := otelrunlimit.New(otelrunlimit.Config{
//		MeterProvider:  meterProvider,  // nil: the global one, if set
//		TracerProvider: tracerProvider, // nil: the global one, if set
//	})
//	defer telemetry.Close() // the provider may outlive the Runtime
//	cfg.Observer = telemetry.Observer()
//	cfg.CleanupObserver = telemetry
//	runtime, err := wiring.Open(ctx, cfg)
//	for name, stats := range runtime.StatsFuncs() {
//		stop, err := telemetry.WatchStore(name, stats)
//		...
//	}
//
// [Telemetry.Close] unregisters the callbacks the Telemetry registered
// with the meter provider; the fx module calls it when the application
// stops or fails to start. The admission counts' callback is registered
// with the first admission counted, so a Telemetry that never saw one
// (its application never started) leaves nothing with the provider.
//
// # With a limiter alone
//
// [NewObserver] returns the admission metrics as an app.Observer:
//
//	observer, err := otelrunlimit.NewObserver(meterProvider)
//	limiter, err := app.NewLimiter(store, app.LimiterConfig{Observer: observer, Name: "edge"})
//
// For the store's headroom as well, build a [Telemetry] with [New] and use its
// observer (the New example):
//
//	telemetry, err := otelrunlimit.New(otelrunlimit.Config{MeterProvider: meterProvider})
//	defer telemetry.Close()
//	limiter, err := app.NewLimiter(store, app.LimiterConfig{Observer: telemetry.Observer(), Name: "edge"})
//	stop, err := telemetry.WatchStore("edge", store.Stats)
//	defer stop()
//
// # Metrics
//
// Names follow OpenTelemetry's semantic conventions for custom metrics
// (the runlimit namespace, dots between components, units apart from the
// names, counted things in braces):
//
//	name                                       instrument  unit         attributes
//	runlimit.admissions                        counter     {admission}  runlimit.limiter, runlimit.policy.id, runlimit.policy.scope, runlimit.outcome
//	runlimit.admission.duration                histogram   s            runlimit.limiter, runlimit.outcome
//	runlimit.admission.errors                  counter     {error}      runlimit.limiter, runlimit.may_have_consumed_quota
//	runlimit.store.headroom                    gauge       {counter}    runlimit.store
//	runlimit.store.fullest_partition.headroom  gauge       {counter}    runlimit.store
//	runlimit.cleanup.runs                      counter     {run}        runlimit.store
//	runlimit.cleanup.removed                   counter     {counter}    runlimit.store
//	runlimit.cleanup.failures                  counter     {failure}    runlimit.store
//
// runlimit.outcome is allowed, quota_denied, shadow_denied,
// capacity_denied or failed.
//
// runlimit.admissions counts checks by their own policy. Each check of an
// allowed admission counts (its policy's quota was consumed), and each
// check of a failed one; of a denied or shadow-denied admission only the
// check that decided it counts, as quota_denied, capacity_denied or
// shadow_denied. So a CheckAll of a client and an identity policy that is
// allowed adds one allowed to each policy, and one that the identity
// policy denies adds one quota_denied to the identity policy alone: the
// sum of denials by policy says which policy denies, and the sum of
// denials over policies is the number of denied admissions. Count
// admissions, batches as one, with the histogram's count by outcome.
//
// runlimit.admission.duration is the store's answer time, one
// measurement per admission, with explicit buckets from 1 µs to 1 s
// ([LatencyBuckets]).
//
// The headroom gauges report a store's free counter slots: all
// partitions together, and the fullest partition's, the first to deny
// new keys with capacity_denied (for PostgreSQL, the capacity ledger's
// fullest shard). A memory shard poisoned by a panic has none. A store
// whose Stats reports no partitions (a host's store without a bound)
// reports no headroom. The store
// is read on collection at most once per Config.StatsInterval (10 s by
// default) whatever the exporter's period; a failed read reports no
// headroom for that store until the next one. Collections wait for a
// read at most Config.StatsTimeout (1 s by default) from its start: a
// scrape, whose context often has no deadline, is not held for the
// store's whole budget by a ledger that another session keeps locked. It
// reports no headroom for that store, and the read goes on in the
// background, one at a time, for the collections after it, which do not
// wait for it again while it is held up.
//
// # Spans
//
// With a tracer provider, each admission is a span, runlimit.check for
// Limiter.Check and runlimit.check_all for Limiter.CheckAll, started in
// the caller's context (so it nests under the request's span) before the
// store is called (so a database client's spans nest under it). It
// carries runlimit.limiter, runlimit.batch.size, runlimit.policies (the
// checks' "id/scope" in caller order) and runlimit.outcome; for a denial
// runlimit.failing_index and the deciding check's runlimit.policy.id and
// runlimit.policy.scope; for a failure an error status with the error's
// text, error.type and runlimit.may_have_consumed_quota. Each cleanup
// pass over a store is a runlimit.cleanup span with runlimit.store and
// runlimit.cleanup.removed.
//
// # Cost
//
// A limiter without an observer runs the unobserved path: with no
// provider given or set globally, [Telemetry.Observer] returns nil and
// nothing is installed. With metrics, an admission adds a few cached
// attribute lookups and measurements and allocates nothing; with spans
// it also starts and ends a span, before and after the store.
package otelrunlimit
