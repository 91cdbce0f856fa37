// Package wiring builds and runs Runlimit from a [Config]: the store that
// holds the quota, the [app.Limiter] over it, the key hasher, an optional
// memory gate and the background cleanup loop, started and stopped as one
// [Runtime], without fx.
package wiring
