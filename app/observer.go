package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/callerctx"
	"github.com/runlimit/runlimit/internal/nilcheck"
	"github.com/runlimit/runlimit/ports"
)

// ErrStorePanicked is the error of the [Event] of an admission whose store
// panicked. Observers receive that event (a [ContextObserver] through
// EndAdmission) before the panic goes on to the caller of Check or
// CheckAll, which never gets a decision. [ports.MayHaveConsumedQuota]
// answers true for it: what the store did before it panicked is unknown.
var ErrStorePanicked = errors.New("runlimit: store panicked")

// Observer receives an [Event] for every admission a [Limiter] makes: the
// hook for metrics, logs and traces of decisions. An admission is a Check
// or CheckAll that reached the store; input the limiter rejects first
// (domain.ErrInvalidInput) is returned to the caller and not observed.
//
// ObserveAdmission runs on the caller's goroutine once the store has
// answered, before Check or CheckAll returns, so it must be quick and safe
// for concurrent use; the Event is valid only during the call. A panic in
// it is recovered and logged (see LimiterConfig.Logger): the caller still
// gets the store's decision or error, as quota may already be consumed.
//
// Events carry policies, outcomes, denial reasons, errors and timings,
// never subjects or subject and counter keys, so nothing an observer
// records can reveal who was checked.
type Observer interface {
	ObserveAdmission(Event)
}

// ObserverFunc adapts a function to an [Observer].
type ObserverFunc func(Event)

// ObserveAdmission calls f(e). A nil f does nothing.
func (f ObserverFunc) ObserveAdmission(e Event) {
	if f != nil {
		f(e)
	}
}

// JoinObservers returns an Observer that hands every event to each of
// observers in order, nil ones (a nil func or pointer in the interface
// included) left out, such as a metrics observer and a decision log. A [Limiter] recovers and logs a panic of each one apart, so
// one that panics costs the others nothing. It returns nil when no observer
// is left, and the observer itself when only one is.
func JoinObservers(observers ...Observer) Observer {
	joined := joinedObservers(nilcheck.Flatten(observers, func(o Observer) ([]Observer, bool) {
		j, ok := o.(joinedObservers)
		return j, ok
	}))
	switch len(joined) {
	case 0:
		return nil
	case 1:
		return joined[0]
	}
	return joined
}

// joinedObservers is what [JoinObservers] returns for two or more.
type joinedObservers []Observer

// ObserveAdmission hands e to each observer in order. A limiter does not
// call it: it calls each observer itself, recovering each one's panic.
func (j joinedObservers) ObserveAdmission(e Event) {
	for _, o := range j {
		o.ObserveAdmission(e)
	}
}

// Event is what an [Observer] learns of one admission. Read the checks'
// policies through [Event.Policy] and their decisions through
// [Event.Decision]; the checks themselves, which hold keys, are not exposed.
type Event struct {
	// Limiter is the LimiterConfig.Name of the limiter that admitted.
	Limiter string
	// Size is the number of checks admitted together: 1 for Check.
	Size int
	// CheckAll is true for an admission by CheckAll, a batch even of one,
	// and false for one by Check.
	CheckAll bool
	// Outcome is the admission's outcome, the batch's for CheckAll
	// (domain.ShadowDenied included). Zero when Err is set.
	Outcome domain.Outcome
	// Index is the check that decided a denial or a shadow denial, in
	// caller order: the first failing check. -1 otherwise.
	Index int
	// Reason is why the check at Index was denied. Zero when Index is -1.
	Reason domain.DenialReason
	// Err is the store's error: the admission failed closed. See
	// [Event.MayHaveConsumedQuota].
	Err error
	// Duration is how long the store took to answer.
	Duration time.Duration

	check    domain.Check // the check of a single-check admission
	decision domain.Decision
	batch    *domain.Batch // the batch of any other admission
	decided  domain.BatchDecision
}

// Policy returns the policy of check i in caller order, or false when i is
// out of range. (A broken store can change the checks of the batch it was
// given: the event then reports an error, and Policy only what the batch
// still holds.)
func (e Event) Policy(i int) (domain.Policy, bool) {
	switch {
	case i < 0 || i >= e.Size || (e.batch != nil && i >= e.batch.Len()):
		return domain.Policy{}, false
	case e.batch == nil:
		return e.check.Policy(), true
	default:
		return e.batch.Check(i).Policy(), true
	}
}

// Decision returns the decision of check i in caller order when the
// admission was allowed or shadow-denied as a whole: every check's, some of
// which may be shadow denials. A denied admission consumed nothing and holds
// no per-check decisions (read Index and Reason), nor does a failed one.
func (e Event) Decision(i int) (domain.Decision, bool) {
	if e.Err != nil || e.Outcome == domain.Denied || i < 0 || i >= e.Size {
		return domain.Decision{}, false
	}
	if e.batch == nil {
		return e.decision, true
	}
	return e.decided.Decision(i)
}

// MayHaveConsumedQuota reports whether a failed admission may have
// consumed quota, as [ports.MayHaveConsumedQuota] answers for Err.
func (e Event) MayHaveConsumedQuota() bool {
	return e.Err != nil && ports.MayHaveConsumedQuota(e.Err)
}

// policies returns the policies of the checks in caller order, as
// "id/scope" separated by commas.
func (e Event) policies() string {
	var b strings.Builder
	for i := range e.Size {
		if i > 0 {
			b.WriteByte(',')
		}
		p, _ := e.Policy(i)
		b.WriteString(p.ID().String())
		b.WriteByte('/')
		b.WriteString(p.Scope().String())
	}
	return b.String()
}

// String describes the event by its policies and outcome only.
func (e Event) String() string {
	s := fmt.Sprintf("runlimit admission limiter=%q size=%d policies=%s", e.Limiter, e.Size, e.policies())
	if e.Err != nil {
		return fmt.Sprintf("%s error=%q may_have_consumed_quota=%t duration=%s",
			s, e.Err.Error(), e.MayHaveConsumedQuota(), e.Duration)
	}
	s += " outcome=" + e.Outcome.String()
	if p, ok := e.Policy(e.Index); ok {
		s += fmt.Sprintf(" index=%d policy=%s scope=%s reason=%s", e.Index, p.ID(), p.Scope(), e.Reason)
	}
	return s + " duration=" + e.Duration.String()
}

// Format prints [Event.String] for every verb, so that no verb reaches the
// checks the event holds by reflection.
func (e Event) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(e.String())) }

// GoString is [Event.String], for %#v.
func (e Event) GoString() string { return e.String() }

// eventJSON is the encoding/json form of an [Event].
type eventJSON struct {
	Limiter              string        `json:"limiter"`
	Size                 int           `json:"size"`
	Policies             []string      `json:"policies"`
	Outcome              string        `json:"outcome,omitempty"`
	Index                *int          `json:"index,omitempty"`
	Reason               string        `json:"reason,omitempty"`
	Error                string        `json:"error,omitempty"`
	MayHaveConsumedQuota *bool         `json:"may_have_consumed_quota,omitempty"`
	Duration             time.Duration `json:"duration"`
}

// MarshalJSON encodes the limiter, the size, the policies ("id/scope"),
// then either the outcome (with the deciding check's index and reason for
// a denial) or the error's text and whether it may have consumed quota,
// and the duration in nanoseconds. Never the checks, their keys, nor the
// fields of the error, which the default encoding would walk.
func (e Event) MarshalJSON() ([]byte, error) {
	j := eventJSON{Limiter: e.Limiter, Size: e.Size, Policies: make([]string, max(e.Size, 0)), Duration: e.Duration}
	for i := range j.Policies {
		p, _ := e.Policy(i)
		j.Policies[i] = p.ID().String() + "/" + p.Scope().String()
	}
	if e.Err != nil {
		consumed := e.MayHaveConsumedQuota()
		j.Error, j.MayHaveConsumedQuota = e.Err.Error(), &consumed
	} else {
		j.Outcome = e.Outcome.String()
		if _, ok := e.Policy(e.Index); ok {
			index := e.Index
			j.Index, j.Reason = &index, e.Reason.String()
		}
	}
	return json.Marshal(j)
}

// LogValue logs the event as a group of what [Event.MarshalJSON] encodes,
// the policies joined by commas, for log/slog.
func (e Event) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 7)
	attrs = append(attrs, slog.String("limiter", e.Limiter), slog.Int("size", e.Size),
		slog.String("policies", e.policies()))
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()),
			slog.Bool("may_have_consumed_quota", e.MayHaveConsumedQuota()))
	} else {
		attrs = append(attrs, slog.String("outcome", e.Outcome.String()))
		if _, ok := e.Policy(e.Index); ok {
			attrs = append(attrs, slog.Int("index", e.Index), slog.String("reason", e.Reason.String()))
		}
	}
	attrs = append(attrs, slog.Duration("duration", e.Duration))
	return slog.GroupValue(attrs...)
}

// observe returns a store that applies admissions as raw does and reports
// every one of them to o. Its single-check path is raw's ([engine.single],
// or a batch of one on a store without one), so the limiter over it takes
// the path it takes without an observer, and every Check reaches
// AdmitCheck and every CheckAll Admit: the event says which. The limiter
// validates input before it reaches the wrapper, so invalid input is never
// observed.
func observe(raw *engine, o Observer, name string, logger *slog.Logger) ports.Store {
	observers := []Observer{o}
	if j, ok := o.(joinedObservers); ok {
		observers = j
	}
	s := &observedStore{raw: raw, observers: observers, name: name, logger: logger}
	for i, o := range observers {
		if co, ok := o.(ContextObserver); ok {
			if s.contextual == nil {
				s.contextual = make([]ContextObserver, len(observers))
			}
			s.contextual[i] = co
		}
	}
	return s
}

type observedStore struct {
	raw       *engine // the engine over the store, unobserved
	observers []Observer
	// contextual holds, by the index of each observer, the observer as a
	// ContextObserver when it is one. Nil when none is: the admission then
	// pays nothing before the store.
	contextual []ContextObserver
	name       string
	logger     *slog.Logger // nil: slog.Default()
}

// maxStackObservers is how many observers an admission keeps the
// contexts of on the stack; more cost an allocation.
const maxStackObservers = 4

// begin hands e to each context observer in turn, before the store,
// stores the context each one returns in ctxs by its index (nil when it
// panicked: it then sees the admission through ObserveAdmission) and returns the
// context the store is to be called with.
func (s *observedStore) begin(ctx context.Context, e *Event, ctxs []context.Context) context.Context {
	for i, co := range s.contextual {
		if co != nil {
			ctx = s.startOne(ctx, co, e, &ctxs[i])
		}
	}
	return ctx
}

// startOne calls co.StartAdmission. A panic is recovered and logged, and
// the admission goes on with ctx: an observer must not keep a request from
// its decision.
func (s *observedStore) startOne(ctx context.Context, co ContextObserver, e *Event, out *context.Context) (next context.Context) {
	next = ctx
	defer func() {
		if v := recover(); v != nil {
			next = ctx
			s.logPanic(ctx, e, v)
		}
	}()
	// A nil pointer in the interface is a nil context too: the store
	// would call its methods and panic, an observer's bug that only
	// a panic in the observer itself is kept from the caller otherwise.
	if c := co.StartAdmission(ctx, *e); c != nil && !nilcheck.IsNil(c) {
		next = c
	}
	*out = next
	return next
}

// notify hands e to each observer in turn: EndAdmission with its own
// context to a context observer whose StartAdmission returned, and
// ObserveAdmission to any other, a context observer whose StartAdmission
// panicked included: it has no context of its own for the admission, but
// its counts must stay whole.
func (s *observedStore) notify(ctx context.Context, e *Event, ctxs []context.Context) {
	for i, o := range s.observers {
		if ctxs != nil {
			if co := s.contextual[i]; co != nil && ctxs[i] != nil {
				s.endOne(ctx, ctxs[i], co, e)
				continue
			}
		}
		s.notifyOne(ctx, o, e)
	}
}

// notifyOne hands e to o. The store has already decided, and may have
// consumed quota, so a panicking observer must not turn the admission into
// a panic in the caller, nor keep the next observer from its event: the
// panic is recovered and logged, and the caller gets what the store
// answered.
func (s *observedStore) notifyOne(ctx context.Context, o Observer, e *Event) {
	defer func() {
		if v := recover(); v != nil {
			s.logPanic(ctx, e, v)
		}
	}()
	o.ObserveAdmission(*e)
}

// endOne is notifyOne for a context observer: it calls EndAdmission with
// the context its StartAdmission returned, and logs a panic with the
// caller's.
func (s *observedStore) endOne(ctx, own context.Context, co ContextObserver, e *Event) {
	defer func() {
		if v := recover(); v != nil {
			s.logPanic(ctx, e, v)
		}
	}()
	co.EndAdmission(own, *e)
}

// logPanic reports an observer's panic at error level. It logs the panic
// value's type, and its text only for an error of package runtime (an
// index out of range, a nil dereference), which holds no caller data:
// any other value may be built from a subject or a key. No stack is
// logged, as a stack's argument words can hold key bytes. A panic before
// the store answered has the outcome "pending".
func (s *observedStore) logPanic(ctx context.Context, e *Event, v any) {
	logger := s.logger
	if logger == nil {
		logger = slog.Default()
	}
	outcome := e.Outcome.String()
	switch {
	case e.Err != nil:
		outcome = "error"
	case e.Outcome == 0:
		outcome = "pending"
	}
	attrs := []slog.Attr{
		slog.String("limiter", e.Limiter),
		slog.String("policies", e.policies()),
		slog.String("outcome", outcome),
		slog.String("panic_type", fmt.Sprintf("%T", v)),
	}
	if text, ok := runtimeErrorText(v); ok {
		attrs = append(attrs, slog.String("panic", text))
	}
	logger.LogAttrs(ctx, slog.LevelError, "runlimit: observer panicked; the admission stands", attrs...)
}

// runtimeErrorText returns the text of a panic value that is one of
// package runtime's own errors. A value of another package that merely
// implements runtime.Error could say anything.
func runtimeErrorText(v any) (string, bool) {
	re, ok := v.(runtime.Error)
	if !ok {
		return "", false
	}
	t := reflect.TypeOf(re)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() != "runtime" {
		return "", false
	}
	return re.Error(), true
}

// unanswered reports an admission whose store never answered, because it
// panicked (or called runtime.Goexit), with the error [ErrStorePanicked],
// so that every observer hears of it, and a context observer's
// EndAdmission closes what its StartAdmission opened. The panic then goes
// on to the caller: a limiter does not recover a store's panic. Deferred
// by Admit and AdmitCheck, it does nothing once the store has answered.
func (s *observedStore) unanswered(ctx context.Context, e *Event, ctxs []context.Context, start time.Time, answered *bool) {
	if *answered {
		return
	}
	e.Duration, e.Err = time.Since(start), ErrStorePanicked
	s.notify(ctx, e, ctxs)
}

// Admit applies a CheckAll's batch and reports it.
func (s *observedStore) Admit(ctx context.Context, b *domain.Batch) error {
	e := Event{Limiter: s.name, Size: b.Len(), Index: -1, CheckAll: true, batch: b}
	caller := ctx
	var ctxs []context.Context
	if s.contextual != nil {
		var stack [maxStackObservers]context.Context
		ctxs = stack[:]
		if len(s.observers) > len(stack) {
			ctxs = make([]context.Context, len(s.observers))
		}
		var release func()
		ctx, release = callerctx.Bind(caller, s.begin(ctx, &e, ctxs))
		defer release()
	}
	start := time.Now()
	answered := false
	defer s.unanswered(caller, &e, ctxs, start, &answered)
	err := s.raw.admit(ctx, b, e.Size)
	answered = true
	e.Duration, e.Err = time.Since(start), err
	if err == nil {
		// A store that answered without error left a decided batch; should
		// it not have, the engine reports that error to the caller, and
		// the event says so too.
		e.decided, e.Err = b.Decision()
	}
	if e.Err == nil {
		e.Outcome = e.decided.Outcome()
		if i, den, ok := e.decided.Denied(); ok {
			e.Index, e.Reason = i, den.Reason()
		}
	}
	s.notify(caller, &e, ctxs)
	return err
}

// AdmitCheck applies a Check's check, through the store's single-check
// path or as a batch of one, and reports it.
func (s *observedStore) AdmitCheck(ctx context.Context, check domain.Check) (domain.Decision, error) {
	e := Event{Limiter: s.name, Size: 1, Index: -1, check: check}
	caller := ctx
	var ctxs []context.Context
	if s.contextual != nil {
		var stack [maxStackObservers]context.Context
		ctxs = stack[:]
		if len(s.observers) > len(stack) {
			ctxs = make([]context.Context, len(s.observers))
		}
		var release func()
		ctx, release = callerctx.Bind(caller, s.begin(ctx, &e, ctxs))
		defer release()
	}
	start := time.Now()
	answered := false
	defer s.unanswered(caller, &e, ctxs, start, &answered)
	d, err := s.raw.admitCheck(ctx, &check)
	answered = true
	e.Duration, e.Err, e.decision = time.Since(start), err, d
	if err == nil {
		e.Outcome = d.Outcome()
		if den, ok := d.Denial(); ok {
			e.Index, e.Reason = 0, den.Reason()
		}
	}
	s.notify(caller, &e, ctxs)
	return d, err
}
