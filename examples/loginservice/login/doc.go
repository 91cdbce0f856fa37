// Package login is the login service of examples/loginservice: a POST
// /login endpoint behind Runlimit's HTTP adapter, wired with fx through
// Runlimit's module, and a readiness probe. The command in the parent
// folder runs it; its tests start it on a real listener.
//
// # The flow of a login
//
// A request passes three checks, each before anything more expensive:
//
//  1. a [httplimit.Middleware] counts the client network against
//     "login.gate/network" before the body is read. The client is the
//     connection's peer, or, only when the peer is one of
//     Config.Clients.TrustedProxies, the client the proxies name
//     ([httplimit.ClientNetwork]);
//  2. a second middleware counts a stricter "login.trial/network" in
//     shadow mode ([Limits.Trial]): it never refuses, but the response's
//     RateLimit shows r=0 and the service logs "login: shadow denial";
//  3. the handler reads the body (JSON or a form, at most
//     Config.MaxBodyBytes), normalizes the identity
//     ([httplimit.AppendIdentity]) and checks "login/client" and
//     "login/identity" as one batch with a [httplimit.Guard], so that a
//     spray of one identity from many networks and a spray of many
//     identities from one network are both stopped, and neither costs
//     quota when the other is exhausted. Only then is the password
//     compared, in constant time ([Users]). The identity's limit is
//     private ([httplimit.Limit].Private): anyone may try any identity,
//     so its count appears in RateLimit only when it refuses the
//     attempt, never as an account's activity in an admitted answer.
//
// A denial is answered 429 with RateLimit, RateLimit-Policy and
// Retry-After; a failure (of the store, the database, or the key function,
// such as a forwarding header a trusted proxy garbled) 503, never a login.
// No response, header or log record holds an identity, a client address or
// a password.
//
// # Stores
//
// On the memory backend every counter is in one memory store. With a
// database ([Config.Runtime] with a DatabaseURL), the network limits are
// checked on a hard-bounded memory gate in each process
// (wiring.Runtime.Gate) and the client and identity quota is shared by
// every replica in PostgreSQL. The gate's policies have ids of their own.
//
// # Wiring
//
// [Options] returns the service as fx options over runlimitfx.Module. The
// service's constructors take what the module provides: the
// *wiring.Runtime (for its gate and limiter), the domain.KeyHasher and the
// runlimitfx.ReadyFunc behind GET /healthz. Routes join the mux through
// the value group [RoutesGroup], and the runtime's observers through
// runlimitfx.ObserversGroup. The command adds GET /metrics that way: the
// promfx module beside Options provides the route and the meter provider
// that runlimitfx.Module records into.
package login
