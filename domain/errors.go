package domain

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidInput is matched by every error that reports a caller mistake:
// a malformed identifier, policy, check or batch. Such errors are returned
// before any storage is touched, so they never consume quota.
var ErrInvalidInput = errors.New("runlimit: invalid input")

// Class sentinels. Each typed error below unwraps to exactly one of them and
// also matches [ErrInvalidInput].
var (
	ErrInvalidIdentifier = errors.New("runlimit: invalid identifier")
	ErrInvalidPolicy     = errors.New("runlimit: invalid policy")
	ErrInvalidCheck      = errors.New("runlimit: invalid check")
	ErrInvalidBatch      = errors.New("runlimit: invalid batch")
)

// ErrSecretTooShort is the error of [NewKeyHasher] for a secret shorter
// than [MinSecretLength]: a caller mistake, so it matches [ErrInvalidInput].
var ErrSecretTooShort = fmt.Errorf("%w: key secret must be at least %d bytes", ErrInvalidInput, MinSecretLength)

// IdentifierProblem says what is wrong with an identifier.
type IdentifierProblem uint8

// Identifier problems.
const (
	IdentifierEmpty IdentifierProblem = iota + 1
	IdentifierTooLong
	IdentifierInvalidByte
)

// IdentifierError reports an identifier that is empty, too long or contains a
// byte outside the allowed set. It names the offending offset, never the
// identifier's text.
type IdentifierError struct {
	Field   string // "policy id" or "scope id"
	Problem IdentifierProblem
	Length  int // length in bytes of the rejected identifier
	Offset  int // byte offset of the first invalid byte (IdentifierInvalidByte only)
}

func (e *IdentifierError) Error() string {
	switch e.Problem {
	case IdentifierEmpty:
		return fmt.Sprintf("runlimit: invalid %s: empty", e.Field)
	case IdentifierTooLong:
		return fmt.Sprintf("runlimit: invalid %s: %d bytes long, at most %d allowed", e.Field, e.Length, MaxIdentifierLength)
	default:
		return fmt.Sprintf("runlimit: invalid %s: byte offset %d is not an ASCII letter, digit or one of - . _ : /", e.Field, e.Offset)
	}
}

// Unwrap returns [ErrInvalidIdentifier].
func (e *IdentifierError) Unwrap() error { return ErrInvalidIdentifier }

// Is reports whether target is [ErrInvalidInput].
func (e *IdentifierError) Is(target error) bool { return target == ErrInvalidInput }

// PolicyProblem says what is wrong with a policy.
type PolicyProblem uint8

// Policy problems, in the order they are checked.
const (
	LimitOutOfRange PolicyProblem = iota + 1
	WindowNotPositive
	WindowNotWholeMilliseconds
	WindowTooLarge
	ModeUnknown
)

// PolicyError reports a limit, window or mode outside the supported bounds.
type PolicyError struct {
	Problem PolicyProblem
	Limit   int64
	Window  time.Duration
	Mode    Mode
}

func (e *PolicyError) Error() string {
	switch e.Problem {
	case LimitOutOfRange:
		return fmt.Sprintf("runlimit: invalid policy: limit %d is outside 1..%d", e.Limit, MaxLimit)
	case WindowNotPositive:
		return fmt.Sprintf("runlimit: invalid policy: window %v is not positive", e.Window)
	case WindowNotWholeMilliseconds:
		return fmt.Sprintf("runlimit: invalid policy: window %v is not a whole number of milliseconds", e.Window)
	case WindowTooLarge:
		return fmt.Sprintf("runlimit: invalid policy: window %v exceeds the maximum of %d ms", e.Window, MaxWindow/time.Millisecond)
	default:
		return fmt.Sprintf("runlimit: invalid policy: unknown quota mode %d", uint8(e.Mode))
	}
}

// Unwrap returns [ErrInvalidPolicy].
func (e *PolicyError) Unwrap() error { return ErrInvalidPolicy }

// Is reports whether target is [ErrInvalidInput].
func (e *PolicyError) Is(target error) bool { return target == ErrInvalidInput }

// CheckProblem says what is wrong with a check.
type CheckProblem uint8

// Check problems.
const (
	CheckZeroPolicy CheckProblem = iota + 1
	CheckZeroKey
	CostOutOfRange
)

// CheckError reports a check built without a policy or subject key, or with
// a cost outside 1..limit.
type CheckError struct {
	Problem CheckProblem
	Cost    int64
	Limit   int64
}

func (e *CheckError) Error() string {
	switch e.Problem {
	case CheckZeroPolicy:
		return "runlimit: invalid check: zero policy (use NewPolicy)"
	case CheckZeroKey:
		return "runlimit: invalid check: zero subject key (derive one with a KeyHasher)"
	default:
		return fmt.Sprintf("runlimit: invalid check: cost %d is outside 1..%d", e.Cost, e.Limit)
	}
}

// Unwrap returns [ErrInvalidCheck].
func (e *CheckError) Unwrap() error { return ErrInvalidCheck }

// Is reports whether target is [ErrInvalidInput].
func (e *CheckError) Is(target error) bool { return target == ErrInvalidInput }

// BatchProblem says what is wrong with a batch.
type BatchProblem uint8

// Batch problems, in the order they are checked.
const (
	BatchEmpty BatchProblem = iota + 1
	BatchTooLarge
	BatchInvalidCheck
	BatchMixedModes
	BatchDuplicateKey
	// BatchNotPrepared: a nil batch, or one that no successful
	// [NewBatch] or [Batch.Reset] prepared (see [Batch.Ready]).
	BatchNotPrepared
)

// BatchError reports a structurally invalid batch. It is returned before any
// storage is touched.
type BatchError struct {
	Problem BatchProblem
	Size    int   // number of checks in the batch
	Max     int   // configured maximum (BatchTooLarge only)
	Index   int   // index of the offending check
	First   int   // earlier index it conflicts with (BatchMixedModes, BatchDuplicateKey)
	Err     error // the check's own error (BatchInvalidCheck only)
}

func (e *BatchError) Error() string {
	switch e.Problem {
	case BatchEmpty:
		return "runlimit: invalid batch: no checks"
	case BatchTooLarge:
		return fmt.Sprintf("runlimit: invalid batch: %d checks, at most %d allowed", e.Size, e.Max)
	case BatchInvalidCheck:
		return fmt.Sprintf("runlimit: invalid batch: check %d: %v", e.Index, e.Err)
	case BatchMixedModes:
		return fmt.Sprintf("runlimit: invalid batch: check %d has a different quota mode than check %d", e.Index, e.First)
	case BatchNotPrepared:
		return "runlimit: invalid batch: not prepared by NewBatch or a successful Reset"
	default:
		return fmt.Sprintf("runlimit: invalid batch: checks %d and %d share a counter key", e.First, e.Index)
	}
}

// Unwrap returns [ErrInvalidBatch] and, for an invalid check, its error.
func (e *BatchError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidBatch, e.Err}
	}
	return []error{ErrInvalidBatch}
}

// Is reports whether target is [ErrInvalidInput].
func (e *BatchError) Is(target error) bool { return target == ErrInvalidInput }
