package httplimit

import "net/http"

// rejectWriter is the ResponseWriter a [RejectFunc] writes through. A
// refusal must never look like success, whatever the RejectFunc does: a
// status below 300, or 304, is replaced by the rejection's, a body written
// before any status is sent under the rejection's status rather than
// net/http's implicit 200, and a RejectFunc that writes nothing still
// sends it.
type rejectWriter struct {
	w      http.ResponseWriter
	status int  // the rejection's status, Rejection.Status
	wrote  bool // a final status has been sent
}

var (
	_ http.Flusher = (*rejectWriter)(nil)
	// http.ResponseController finds the other methods of w (deadlines,
	// Hijack, full duplex) through Unwrap, and flushes through FlushError.
	_ interface{ Unwrap() http.ResponseWriter } = (*rejectWriter)(nil)
	_ interface{ FlushError() error }           = (*rejectWriter)(nil)
)

func (rw *rejectWriter) Header() http.Header { return rw.w.Header() }

// WriteHeader sends code, or the rejection's status in place of a status
// that reads as success: an informational or success status would be the
// only thing a client reads of a refusal, and 304 Not Modified tells a
// client holding a cached response that the response is still good, so
// that it shows that success instead. Redirects (a page that explains)
// and every error status are the RejectFunc's to choose. A second call
// goes to w, which reports it as superfluous.
func (rw *rejectWriter) WriteHeader(code int) {
	if !rw.wrote {
		rw.wrote = true
		if code < 300 || code == http.StatusNotModified {
			code = rw.status
		}
	}
	rw.w.WriteHeader(code)
}

func (rw *rejectWriter) Write(p []byte) (int, error) {
	rw.finish()
	return rw.w.Write(p)
}

// finish sends the rejection's status unless a status has been sent. It
// runs after the RejectFunc returns, so that one that wrote nothing does
// not leave net/http to answer 200.
func (rw *rejectWriter) finish() {
	if !rw.wrote {
		rw.WriteHeader(rw.status)
	}
}

// Flush sends the status, as finish does, then flushes w if it can.
func (rw *rejectWriter) Flush() { _ = rw.FlushError() }

// FlushError is Flush for http.ResponseController: it reports
// http.ErrNotSupported when w cannot flush.
func (rw *rejectWriter) FlushError() error {
	rw.finish()
	return http.NewResponseController(rw.w).Flush()
}

// Unwrap returns the ResponseWriter of the request, for
// http.ResponseController. What is written to it directly is not checked.
func (rw *rejectWriter) Unwrap() http.ResponseWriter { return rw.w }
