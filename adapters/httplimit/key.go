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
// the rejection function may log them. So does an empty subject, which
// would put every request the key function found nothing for in one
// bucket, and a subject longer than [MaxSubjectLength] (a
// [*SubjectError]). A limit that counts every request together needs a
// fixed subject, such as "all".
type KeyFunc func(dst []byte, r *http.Request) ([]byte, error)

// MaxSubjectLength is the longest subject, in bytes, a [KeyFunc] may
// return or [Guard.Admit] be given: it bounds the hashing one request
// costs. A subject is a normalized identifier (a network, an identity, an
// account or key id), far shorter; derive one from a longer credential
// rather than counting the credential itself.
const MaxSubjectLength = 1024

// checkSubject refuses a subject that is empty or longer than
// MaxSubjectLength.
func checkSubject(i int, subject []byte) error {
	if n := len(subject); n == 0 || n > MaxSubjectLength {
		return &SubjectError{Index: i, Length: n}
	}
	return nil
}
