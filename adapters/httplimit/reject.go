package httplimit

import (
	"io"
	"net/http"
	"strconv"

	"github.com/runlimit/runlimit/domain"
)

// Reason says why a request was refused.
type Reason uint8

const (
	// ReasonQuota: a limit in enforce mode has too little quota left.
	ReasonQuota Reason = iota + 1
	// ReasonCapacity: the store has no room for a new counter (a
	// storage-capacity denial, never shadowed).
	ReasonCapacity
	// ReasonKey: the key function failed, or it returned, or a Guard was
	// given, an empty or overlong subject ([*SubjectError]), or a Guard
	// was given the wrong number of subjects. The subject is unknown or
	// unusable, so nothing was checked.
	ReasonKey
	// ReasonLimiter: the limiter failed or returned no decision, or the
	// Middleware or Guard cannot check the request as it is set up
	// ([ErrNilHandler], a [*NameClashError]). Whether quota was consumed
	// is for ports.MayHaveConsumedQuota to say.
	ReasonLimiter
)

// String returns "quota", "capacity", "key" or "limiter".
func (r Reason) String() string {
	switch r {
	case ReasonQuota:
		return "quota"
	case ReasonCapacity:
		return "capacity"
	case ReasonKey:
		return "key"
	case ReasonLimiter:
		return "limiter"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// RejectFunc writes the response to a refused request: status, headers and
// body are its to choose. The request never reaches the handler, and its
// body has not been read. rej is valid only during the call.
//
// A RejectFunc must not echo the subject: it does not have it, and neither
// rej nor its error holds it, but the request does.
//
// The check runs under the request's context, which net/http cancels when
// the client closes its connection. A check cancelled that way fails with
// an Err that matches context.Canceled while r.Context().Err() is set: the
// client went away, the response goes to nobody, and nothing in the
// service failed. Log or count it apart from a failing limiter, which any
// client could otherwise raise once per request.
//
// A refusal never answers 1xx, 2xx or 304 Not Modified (which has a
// client show a cached success). The ResponseWriter a RejectFunc gets
// sends [Rejection.Status] in place of such a status passed to
// WriteHeader, and before a body written, or a flush made, without a
// status; when the RejectFunc returns having written nothing, the
// middleware sends that status with the headers the RejectFunc set.
// Redirects, 4xx and 5xx statuses are the RejectFunc's to choose. The writer is an
// http.Flusher and unwraps (http.ResponseController) to the request's
// ResponseWriter, whose direct use is not checked.
type RejectFunc func(w http.ResponseWriter, r *http.Request, rej *Rejection)

// Rejection describes a refused request to a [RejectFunc]. A nil
// *Rejection describes a failure with no fields: Status is 503 and every
// other method reports nothing.
type Rejection struct {
	// Reason says why the request was refused.
	Reason Reason
	// Err is the key function's or the limiter's error (ReasonKey,
	// ReasonLimiter), nil for a denial.
	Err error

	v        verdict
	limits   []limit
	quotas   []Quota
	fields   FieldWriter
	retry    int64
	hasRetry bool
}

// Denied returns the index of the limit that denied the request and its
// denial (ReasonQuota, ReasonCapacity).
func (rej *Rejection) Denied() (index int, denial domain.Denial, ok bool) {
	if rej == nil {
		return 0, domain.Denial{}, false
	}
	return rej.v.denied()
}

// Limit returns the field name and policy of limit i of the refused batch,
// such as the index [Rejection.Denied] returns, so that a RejectFunc can
// log or count which limit denied. ok is false when i is out of range.
func (rej *Rejection) Limit(i int) (name string, policy domain.Policy, ok bool) {
	if rej == nil || i < 0 || i >= len(rej.limits) {
		return "", domain.Policy{}, false
	}
	return rej.limits[i].name, rej.limits[i].policy, true
}

// Status returns the default status for the rejection: 429 Too Many
// Requests for a denial, quota or storage capacity alike, and 503 Service
// Unavailable for an error, so that a failure never looks like success.
func (rej *Rejection) Status() int {
	if rej != nil && (rej.Reason == ReasonQuota || rej.Reason == ReasonCapacity) {
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

// RetryAfter returns the Retry-After delay in whole seconds, rounded up:
// the denial's own retry time, raised to the end of the window of any other
// enforcing limit this response reports as exhausted. ok is false for
// errors and for a storage-capacity denial whose store knows no retry time.
func (rej *Rejection) RetryAfter() (seconds int64, ok bool) {
	if rej == nil {
		return 0, false
	}
	return rej.retry, rej.hasRetry
}

// Quotas returns the state of every limit checked for the request, most
// restrictive first, as the fields report them: the state of a
// [Limit.Private] limit that did not deny the request is withheld here
// too. The slice is valid only during the RejectFunc call.
func (rej *Rejection) Quotas() []Quota {
	if rej == nil {
		return nil
	}
	return rej.quotas
}

// WriteFields writes the configured rate-limit fields and, when
// [Rejection.RetryAfter] has a value, Retry-After as delay-seconds.
func (rej *Rejection) WriteFields(h http.Header) {
	if h == nil {
		return
	}
	if rej == nil {
		delete(h, HeaderRetryAfter)
		return
	}
	if rej.fields != nil {
		rej.fields.WriteFields(h, rej.quotas)
	}
	if rej.hasRetry {
		var buf [20]byte
		h[HeaderRetryAfter] = []string{string(appendSFInteger(buf[:0], rej.retry))}
	} else {
		delete(h, HeaderRetryAfter)
	}
}

// DefaultReject writes rej's fields and Retry-After, Cache-Control:
// no-store (a refusal describes this moment only), and a plain-text body
// that is the status text, such as "Too Many Requests". Nothing in it
// depends on the request, which may be nil. A nil rej is a failure (503);
// a nil w gets nothing.
func DefaultReject(w http.ResponseWriter, _ *http.Request, rej *Rejection) {
	if w == nil {
		return
	}
	h := w.Header()
	rej.WriteFields(h)
	delete(h, "Content-Length")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	status := rej.Status()
	w.WriteHeader(status)
	_, _ = io.WriteString(w, http.StatusText(status)+"\n")
}
