package app

import (
	"context"
	"fmt"
	"log/slog"
	"unsafe"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/nilcheck"
	"github.com/runlimit/runlimit/ports"
)

// ErrInvalidConfig is matched by every error [NewLimiter] returns, and by
// every configuration error of the wiring below app. It is
// [ports.ErrInvalidConfig], the contract every constructor shares.
var ErrInvalidConfig = ports.ErrInvalidConfig

// LimiterConfig configures a [Limiter].
type LimiterConfig struct {
	// MaxBatchSize is the largest batch CheckAll accepts. Default 32.
	MaxBatchSize int
	// Observer, when set, receives an [Event] for every admission;
	// [JoinObservers] makes one of several. Default nil: nothing is
	// observed, at no cost. A nil func or pointer in the interface (a nil
	// [ObserverFunc]) counts as nil.
	Observer Observer
	// Name tells this limiter's events apart from another's, such as
	// "gate" and "postgres". Default "".
	Name string
	// Logger receives an error-level record when the Observer panics: the
	// panic is recovered, the admission's decision or error is returned as
	// the store gave it, and the record names the limiter, the policies,
	// the outcome and the panic value's type (its text only for a runtime
	// error), never a subject, a key or a stack. Default nil:
	// [slog.Default] at the time of the panic.
	Logger *slog.Logger
}

// Limiter validates checks, applies them through a [ports.Store] and returns
// decisions in caller order. It is safe for concurrent use.
//
// A Limiter prints as an address under every printer, its store and
// observer unseen: a store may hold a pool whose config holds a database
// password.
//
// Build a Limiter with [NewLimiter]. A nil *Limiter or a zero Limiter has
// no store and fails closed: Check and CheckAll report invalid input as
// usual (a nil ctx included) and otherwise return an error matching
// [ports.ErrNotBuilt] (and so [domain.ErrInvalidInput]) that consumed
// nothing. They never panic.
type Limiter struct {
	// engine is the *engine held as an unsafe.Pointer, which
	// printers that walk values by reflection (spew in testify's diffs,
	// fmt's bad-verb path) print as an address and never follow.
	engine unsafe.Pointer
}

// eng returns l's engine, or nil for a nil or zero Limiter.
func (l *Limiter) eng() *engine {
	if l == nil {
		return nil
	}
	return (*engine)(l.engine)
}

var _ ports.Limiter = (*Limiter)(nil)

// NewLimiter returns a limiter over store. A nil store, a nil pointer in
// the interface included, is an error matching [ErrInvalidConfig].
func NewLimiter(store ports.Store, cfg LimiterConfig) (*Limiter, error) {
	if nilcheck.IsNil(store) {
		return nil, fmt.Errorf("%w: no store", ErrInvalidConfig)
	}
	if cfg.MaxBatchSize < 0 {
		return nil, fmt.Errorf("%w: max batch size %d is negative", ErrInvalidConfig, cfg.MaxBatchSize)
	}
	if cfg.MaxBatchSize == 0 {
		cfg.MaxBatchSize = domain.DefaultMaxBatchSize
	}
	// A nil func or pointer in the interface is no observer: it would
	// panic on every admission.
	cfg.Observer = JoinObservers(cfg.Observer)
	if cfg.Observer != nil {
		// The observer sits between the engine and an engine over the
		// store, so that a limiter without one runs exactly the unobserved
		// path.
		raw := new(engine)
		raw.init(store, cfg.MaxBatchSize)
		store = observe(raw, cfg.Observer, cfg.Name, cfg.Logger)
	}
	e := new(engine)
	e.init(store, cfg.MaxBatchSize)
	return &Limiter{engine: unsafe.Pointer(e)}, nil
}

// Check applies one check. Over the limit is a decision, not an error; an
// error means invalid input or a store failure, and the request must not
// proceed. Invalid input, a nil ctx ([ports.ErrNilContext]) included, is
// found before the store is reached and matches [domain.ErrInvalidInput]
// whatever state the store or ctx is in.
//
// On a store with a single-check path ([ports.CheckAdmitter]) a check costs
// one interface call and no pooled batch.
func (l *Limiter) Check(ctx context.Context, check domain.Check) (domain.Decision, error) {
	// The engine's single-check path is written out here rather than
	// called: a check is 64 bytes, and every call it goes through by value
	// copies it once more.
	//
	// A lone check reports its own error rather than a batch error about it.
	if err := domain.ValidateCheck(&check); err != nil {
		return domain.Decision{}, err
	}
	if ctx == nil {
		return domain.Decision{}, ports.ErrNilContext
	}
	e := l.eng()
	if e == nil {
		return domain.Decision{}, ports.ErrNotBuilt
	}
	if e.single == nil {
		return e.checkBatch(ctx, check)
	}
	d, err := e.single.AdmitCheck(ctx, check)
	if err != nil || d.Outcome() != domain.Allowed {
		// A denial, or a store's answer the caller must not read as
		// given: see vetCheckDecision. Kept out of line, so that the
		// common answer costs one test here.
		return vetCheckDecision(&check, d, err)
	}
	return d, nil
}

// CheckAll applies checks as one atomic batch: all are consumed or none is.
// When the batch is not allowed, the decision names the first failing check
// in caller order. Invalid input is reported as Check reports it.
func (l *Limiter) CheckAll(ctx context.Context, checks []domain.Check) (domain.BatchDecision, error) {
	e := l.eng()
	if e == nil {
		if _, err := domain.NewBatch(checks, domain.DefaultMaxBatchSize); err != nil {
			return domain.BatchDecision{}, err
		}
		if ctx == nil {
			return domain.BatchDecision{}, ports.ErrNilContext
		}
		return domain.BatchDecision{}, ports.ErrNotBuilt
	}
	return e.CheckAll(ctx, checks)
}
