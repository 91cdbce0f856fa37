package ports

import (
	"errors"
	"fmt"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/nilcheck"
)

// ErrNilContext is returned by limiters and stores called with a nil
// context.Context, instead of a nil-pointer panic. A nil context is a caller
// mistake found before any store work: the error matches
// [domain.ErrInvalidInput] and consumed nothing.
var ErrNilContext = fmt.Errorf("%w: nil context.Context", domain.ErrInvalidInput)

// Contracts every store keeps, declared here once so that a host matches
// them with errors.Is whichever store it runs on.
var (
	// ErrClosed is matched by the error of every operation on a store that
	// was closed ([Closer]). Such an error consumed nothing. An open store's
	// errors never match it, a done context's included: hosts take it to
	// mean the store is gone for good.
	ErrClosed = errors.New("runlimit: store is closed")
	// ErrInvalidConfig is matched by every error a constructor returns for
	// a configuration outside its bounds: a store's, the limiter's, the
	// wiring's and every adapter's. Nothing is built.
	ErrInvalidConfig = errors.New("runlimit: invalid config")
	// ErrNegativeMax is matched by the error of [Cleaner.CleanupExpired]
	// asked to remove a negative number of counters: a caller mistake,
	// reported before anything else and removing nothing. It matches
	// [domain.ErrInvalidInput].
	ErrNegativeMax = fmt.Errorf("%w: cleanup maximum is negative", domain.ErrInvalidInput)
	// ErrNotBuilt is matched by the error of every method called on a nil
	// pointer or a zero value of a type that its constructor must build
	// (an app.Limiter, an httplimit Middleware or Guard, a wiring
	// Runtime): a caller mistake found before any store work, so it
	// consumed nothing. It matches both [ErrInvalidConfig] (there is no
	// configuration) and [domain.ErrInvalidInput] (the call was refused).
	ErrNotBuilt = fmt.Errorf("%w: %w: nil or zero value, not built by its constructor", ErrInvalidConfig, domain.ErrInvalidInput)
)

// QuotaConsumer is implemented by store errors that know whether the failed
// operation may have consumed quota.
type QuotaConsumer interface {
	MayHaveConsumedQuota() bool
}

// MayHaveConsumedQuota reports whether the operation that returned err may
// have consumed quota even though it failed, such as a commit whose outcome
// is unknown. Callers must not blindly retry such an operation.
//
// It answers false for nil, for invalid input (which never reaches
// storage) and for an invalid configuration ([ErrInvalidConfig]: nothing
// was built to consume with), whatever the error claims; the error's own
// answer when it implements [QuotaConsumer]; false for a closed store
// ([ErrClosed], which consumed nothing) that makes no claim; and true for
// any other error: an unknown failure is assumed to have consumed.
//
// An error that is a nil pointer in the interface, or wraps one that would
// answer, counts as an unknown failure (true): its methods would
// dereference nil.
func MayHaveConsumedQuota(err error) bool {
	if err == nil {
		return false
	}
	if nilcheck.IsNil(err) {
		return true
	}
	if errors.Is(err, domain.ErrInvalidInput) || errors.Is(err, ErrInvalidConfig) {
		return false
	}
	var qc QuotaConsumer
	if errors.As(err, &qc) {
		return nilcheck.IsNil(qc) || qc.MayHaveConsumedQuota()
	}
	return !errors.Is(err, ErrClosed)
}
