// Package promfx serves the login service's OpenTelemetry metrics to
// Prometheus: an fx [Module] that gives the graph a metric.MeterProvider
// read by the OpenTelemetry Prometheus exporter, and GET /metrics in
// [login.RoutesGroup] to scrape it.
//
// # With the login service
//
// Put the module beside login.Options, as the command does:
//
//	app := fx.New(login.Options(cfg, ln), promfx.Module)
//
// Runlimit's fx module (runlimitfx) finds the meter provider in the graph
// and records into it what the otelrunlimit adapter measures: admissions
// by limiter, policy and outcome, their latency, errors, each store's
// headroom and the cleanup loop's work. The exporter names them the
// Prometheus way: runlimit.admissions is runlimit_admissions_total,
// runlimit.admission.duration is the histogram
// runlimit_admission_duration_seconds, runlimit.store.headroom the gauge
// runlimit_store_headroom, and an attribute such as runlimit.policy.id the
// label runlimit_policy_id. Resource attributes are the labels of
// target_info: service_name is [ServiceName] unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise.
//
// # The registry
//
// The exporter is registered with a *prometheus.Registry of the module's
// own, which it also provides, never with prometheus.DefaultRegisterer:
// GET /metrics serves what this service records and nothing that an
// imported package registers globally, and two services in one process
// do not collide. Register more collectors with the provided registry to
// serve them beside Runlimit's.
//
// # What the metrics hold
//
// Every label is a limiter or store name, a policy or scope id or an
// outcome, all bounded by configuration: never an identity, a client
// address, a password or a key. /metrics is still the service's
// operational picture (which policies deny, how often): serve it to the
// scraper only, as a reverse proxy in front of the service can. To a
// client that reads it, a store's headroom, which falls by one when an
// attempt creates a counter, can say whether the store already held a
// counter for an identity the client tries once, such as the one its
// owner's last login left.
package promfx
