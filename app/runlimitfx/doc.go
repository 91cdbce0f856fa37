// Package runlimitfx is Runlimit's fx module: [Module] builds a
// [wiring.Runtime] from the [wiring.Config] in the graph and runs it with
// the application's lifecycle.
package runlimitfx
