package otelrunlimit

import "time"

// SetNow replaces the clock that bounds how often t reads a store's
// occupancy, for the stores t watches from then on.
func SetNow(t *Telemetry, now func() time.Time) { t.state().now = now }

// MaxCachedAttributes is how many attribute sets a Telemetry keeps before
// it records under the overflow set.
const MaxCachedAttributes = maxCachedAttributes
