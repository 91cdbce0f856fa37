package app

import "context"

// ContextObserver is an [Observer] that also works with the admission's
// context: before the store is called, and with the context it chose when
// the store has answered. A tracer implements it to start a span that the
// store's own spans (a database client's) nest under and to end it with
// the outcome; a decision log to tie its records to the request's trace.
//
// For an Observer that implements ContextObserver, a [Limiter] calls
// StartAdmission on the caller's goroutine before the store, with the
// caller's context and an [Event] that holds what is known then: Limiter,
// Size, CheckAll and the policies ([Event.Policy]), Index -1, and no
// outcome, error or duration. The context it returns (nil, or a nil
// pointer in the interface, means ctx unchanged) is the one the next context observer, and then the store,
// receive. The store's call stays bound to the caller's deadline and
// cancellation even when that context is not derived from ctx (a span
// started from context.Background()): the store then gets its values, and
// it ends when either context does. Once the store has answered, the limiter calls EndAdmission
// with the context StartAdmission returned and the full Event, instead of
// ObserveAdmission.
//
// A panic in either method is recovered and logged as for ObserveAdmission
// (see LimiterConfig.Logger); after a panic in StartAdmission the store is
// called with ctx, and once it has answered the observer gets the full
// Event through ObserveAdmission instead of EndAdmission, so that a
// tracer's panic does not cost its metrics the admission.
//
// A limiter whose observers include no ContextObserver calls nothing
// before the store: implement it only when the context is needed.
type ContextObserver interface {
	Observer
	StartAdmission(ctx context.Context, e Event) context.Context
	EndAdmission(ctx context.Context, e Event)
}
