// Package app is Runlimit's application layer: the [Limiter] that host
// applications call, and the wiring that builds it over a store.
//
// A limiter validates every check before any storage is touched, applies the
// batch through a [ports.Store] and returns the decision:
//
//	store, _ := memory.New(memory.Config{MaxKeys: 50_000, Shards: 64})
//	limiter, _ := app.NewLimiter(store, app.LimiterConfig{})
//	decision, err := limiter.CheckAll(ctx, []domain.Check{client, identity})
//
// An error means invalid input or a store failure: fail closed and use
// [ports.MayHaveConsumedQuota] to learn whether quota may have been spent.
package app
