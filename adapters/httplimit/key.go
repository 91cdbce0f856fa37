package httplimit

import "net/http"

// KeyFunc appends the normalized subject of a request to dst and returns
// the extended slice: the client's network ([RemoteNetwork],
// [ClientNetwork.AppendSubject]), an API key's id, a tenant. The
// application owns it, and it must not read the request body, which the
// handler has not read yet.
//
// A [Middleware] hands the subject to its [domain.KeyHasher], which turns it
// into one HMAC key per policy; the subject is never stored, logged or
// written to a response. Appending to dst lets the middleware reuse one
// buffer, so that a key function allocates nothing.
//
// An error refuses the request: it goes to the [RejectFunc] with
// [ReasonKey], never to the handler. Errors must not quote the subject, as
// the rejection function may log them.
type KeyFunc func(dst []byte, r *http.Request) ([]byte, error)
