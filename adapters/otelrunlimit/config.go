package otelrunlimit

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/runlimit/runlimit/app"
)

// DefaultStatsInterval is [Config.StatsInterval] when it is zero.
const DefaultStatsInterval = 10 * time.Second

// DefaultStatsTimeout is [Config.StatsTimeout] when it is zero.
const DefaultStatsTimeout = time.Second

// Config says where [New] records: the providers of metrics and spans, and
// how often a store's occupancy may be read.
type Config struct {
	// MeterProvider records the metrics. Default nil: the global provider
	// (otel.GetMeterProvider) if the host has set one by the time New is
	// called, and otherwise none: no metrics are recorded and admissions
	// pay nothing for them. A no-op provider records none either, and a
	// nil pointer in the interface counts as nil. It is the host's provider
	// as is, so a dump that walks pointers (the spew in testify's failure
	// messages) of a Config holding one prints its exporters, whose
	// headers may hold an API key; the [Telemetry] New builds never does.
	MeterProvider metric.MeterProvider
	// TracerProvider records a span per admission and per cleanup pass.
	// Default nil: the global provider (otel.GetTracerProvider) if the
	// host has set one by the time New is called, and otherwise none. A
	// no-op provider records none either, and a nil pointer in the
	// interface counts as nil. It prints as MeterProvider does.
	TracerProvider trace.TracerProvider
	// StatsInterval is the least time between two reads of a watched
	// store's occupancy: a collection within it reports the last reading,
	// however often the exporter collects. At least 0. Default 10 seconds
	// ([DefaultStatsInterval]).
	StatsInterval time.Duration
	// StatsTimeout is the most collections wait for a watched store's
	// reading, from its start: one that takes longer (a PostgreSQL ledger
	// locked by another session waits up to the store's budget) reports
	// no headroom for that store, and the reading goes on in the
	// background, one at a time, for the collections after it; those
	// that come while it is still held up do not wait for it again. At
	// least 0. Default 1 second ([DefaultStatsTimeout]).
	StatsTimeout time.Duration
}

// withDefaults validates cfg and fills in its defaults, the global
// providers included.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.StatsInterval < 0 {
		return cfg, fmt.Errorf("%w: otelrunlimit StatsInterval %v is negative", app.ErrInvalidConfig, cfg.StatsInterval)
	}
	if cfg.StatsTimeout < 0 {
		return cfg, fmt.Errorf("%w: otelrunlimit StatsTimeout %v is negative", app.ErrInvalidConfig, cfg.StatsTimeout)
	}
	if cfg.StatsTimeout == 0 {
		cfg.StatsTimeout = DefaultStatsTimeout
	}
	if cfg.StatsInterval == 0 {
		cfg.StatsInterval = DefaultStatsInterval
	}
	cfg.MeterProvider = meterProvider(cfg.MeterProvider)
	cfg.TracerProvider = tracerProvider(cfg.TracerProvider)
	return cfg, nil
}
