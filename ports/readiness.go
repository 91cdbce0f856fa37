package ports

import "context"

// ReadinessChecker is implemented by stores that can prove they are ready
// to serve admissions, for a readiness probe. Ready returns nil only when an
// admission could run now: for a database, the connection answers, the
// statements an admission runs prepare, and the schema is the version the
// store needs. It consumes no quota, is bounded by the store's own
// timeouts as well as ctx, and its error holds no secret. After Close it
// returns an error matching [ErrClosed].
//
// Wiring prefers it to [StatsReporter] for readiness: a store's occupancy
// can be readable while every admission fails.
type ReadinessChecker interface {
	Ready(ctx context.Context) error
}
