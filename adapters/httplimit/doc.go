// Package httplimit puts Runlimit in front of net/http handlers: a
// [Middleware] that checks limits before the handler runs, a [Guard] that
// adds checks inside a handler once it has parsed the body, helpers that
// derive subjects a client cannot choose, and the RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-11.
//
// It is a driving adapter: it imports only the standard library and
// Runlimit's domain and ports, and takes any [ports.Limiter], such as
// app.Limiter.
//
// # Limiting a route
//
// A [Middleware] is built from a limiter, a [domain.KeyHasher], one or
// more limits and a [KeyFunc] that says whom a request counts against:
//
//	m, err := httplimit.NewMiddleware(httplimit.Config{
//		Limiter: limiter,
//		Hasher:  hasher,
//		Limits:  []httplimit.Limit{{Policy: perClient}},
//		Key:     httplimit.RemoteNetwork,
//	})
//	mux.Handle("GET /items/{id}", m.Handler(items))
//
// Every request is checked before the handler runs and before its body is
// read. All limits are one atomic batch: the request is admitted only if
// each has quota left, and then each is consumed. A denied request gets
// 429 Too Many Requests; a failure of the key function or the limiter gets
// 503 Service Unavailable. Neither reaches the handler: the middleware
// never fails open. [Config.Reject] replaces that answer with your own
// ([RejectFunc]); [Rejection] says what happened. Your answer cannot be a
// success either: a RejectFunc that writes a body without a status, or
// nothing, or a status below 300 or 304 Not Modified, sends the
// rejection's 429 or 503. Nothing logs a failure by default: a RejectFunc
// that logs [Rejection].Err (Runlimit's errors never hold a subject or a
// key; a KeyFunc's must not either) and then calls [DefaultReject] keeps
// the answer and leaves a record.
//
// An admitted request reaches the handler with the rate-limit fields set
// and its [Result] in the context ([FromContext]): allowed, or
// shadow-denied by a limit in [domain.Shadow] mode, which lets the request
// through so that a new limit can be watched before it is enforced.
//
// Handler has the shape func(http.Handler) http.Handler, so the middleware
// also fits any router that chains such functions, and can wrap a whole
// mux.
//
// # Whom a request counts against
//
// The subject of a request is bytes the application chooses: a
// [KeyFunc] appends them to a buffer. The hasher turns the subject into a
// 32-byte HMAC key per policy, so the limiter, the store, logs and
// responses never hold it. An empty subject, from a key function or given
// to [Guard.Admit], is refused like a key function's error (a
// [*SubjectError] matching [ErrInvalidSubject], 503 by default), as every
// request it was returned for would share one bucket; so is one longer
// than [MaxSubjectLength]. A limit that counts every request together
// needs a fixed subject.
//
// [RemoteNetwork] counts the connection's peer: an IPv4 address alone, an
// IPv6 address by its /64 (one host usually has a whole /64), and an IPv6
// address that carries an IPv4 client (NAT64, 6to4, Teredo) by that
// IPv4 address. It never
// reads a forwarding header. Behind reverse proxies, a [ClientNetwork]
// reads the one header your proxies write, and only from their networks:
//
//	clients, err := httplimit.NewClientNetwork(httplimit.ClientConfig{
//		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
//		Header:         httplimit.XForwardedForHeader,
//	})
//	// Config.Key: clients.AppendSubject
//
// It takes the rightmost address that is not a trusted proxy, so entries
// a client writes itself are never believed, and refuses the request when
// what a trusted proxy wrote does not name an address (see
// [ClientNetwork]).
//
// Both read the request's RemoteAddr as the server set it. Do not put a
// router's middleware that rewrites RemoteAddr from forwarding headers
// (such as chi's RealIP) in front of the limiter: it would let any client
// name its own key. Put CORS handling in front of it instead: a preflight
// request is counted like any other, and a refusal carries only the
// headers the [RejectFunc] writes.
//
// # Checks after the body
//
// Some subjects are in the body: the identity of a login. A [Guard] checks
// them from inside the handler, in the same style: one atomic batch, the
// same rejection, and rate-limit fields merged with the middleware's. A
// login handler counts the client network in a middleware, so that every
// attempt costs quota before the body is parsed, then checks the client
// and the normalized identity together:
//
//	identity, err := httplimit.AppendIdentity(nil, r.PostFormValue("email"))
//	if err != nil { /* 400 */ }
//	client, err := httplimit.RemoteNetwork(nil, r)
//	if err != nil { /* 503 */ }
//	if _, ok := guard.Admit(w, r, client, identity); !ok {
//		return // the rejection has been written
//	}
//
// [AppendIdentity] folds case and trims white space, so "Alice@Example.com"
// and " alice@example.com" are one identity; it documents exactly what it
// does and does not normalize.
//
// Mark the identity's limit [Limit.Private]:
//
//	Limits: []httplimit.Limit{{Policy: client}, {Policy: identity, Private: true}},
//
// Anyone may try any identity, so its counter is not the client's own: in
// the RateLimit field of an admitted attempt it would tell every client
// how many attempts were made on that account in the current window and
// when the first one came. A private limit's state appears only when it
// denies the request itself (r=0, and Retry-After), which the refusal
// reveals anyway; RateLimit-Policy still describes it.
//
// # Fields
//
// Responses carry the fields of draft 11 through a [FieldWriter], by
// default [Draft11]; a later draft can be written beside it:
//
//	RateLimit-Policy: "auth.login/identity";q=8;w=60, "auth.login/client";q=40;w=60
//	RateLimit: "auth.login/identity";r=0;t=37, "auth.login/client";r=39;t=60
//	Retry-After: 37
//
// A policy is named by its id and scope ("auth.login/client") unless
// [Limit.Name] says otherwise. RateLimit puts the most restrictive limit
// first by its live state, the fewest requests left; RateLimit-Policy
// describes the policies, so its order is fixed by configuration, the
// lowest rate first, and one client sees the same field on every
// response (see [Draft11]).
// Windows and waits are whole seconds rounded up; a quota or shadow denial
// shows r=0. q and r count requests: a limit whose requests cost more than
// one unit ([Limit.Cost]) reports its units divided by the cost.
// Retry-After, on denials only, is never earlier than the t of an
// enforced limit the response reports as exhausted; a limit in shadow
// mode refuses nothing, so its r=0 does not hold a client back and its t
// may be later. Only the limits whose state
// is known appear in RateLimit: when a batch is denied, nothing was
// consumed and the other limits' counters were not read; a
// [Limit.Private] limit appears only when it denied the request.
//
// Neither responses nor errors ever hold a subject or a key. Bodies are
// fixed status texts, and errors name headers, hops and offsets, never
// their contents.
package httplimit
