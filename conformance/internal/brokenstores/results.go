package brokenstores

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/big"
	"sync"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// results is the state of the faults in what a store returns beside an
// error (the twelfth hunt's).
type results struct {
	// lastMu guards lastDecision, the decision AdmitCheck returned last
	// (SingleCheckDecisionBesideError).
	lastMu       sync.Mutex
	lastDecision domain.Decision
}

// errInvalidCheck is SingleCheckErrorUntyped's error for an invalid check.
var errInvalidCheck = fmt.Errorf("%w: invalid check", domain.ErrInvalidInput)

// AdmitCheck applies one check as Admit applies a batch of one (see
// admitCheck), except where the store's fault says otherwise.
func (s *Store) AdmitCheck(ctx context.Context, c domain.Check) (domain.Decision, error) {
	switch s.cfg.Fault {
	case NilContextBeforeCheckValidation:
		if ctx == nil {
			return domain.Decision{}, &Error{Op: "admit", Err: ports.ErrNilContext}
		}
	case DoneContextBeforeCheckValidation:
		if ctx != nil && ctx.Err() != nil {
			return domain.Decision{}, &Error{Op: "admit", Err: ctx.Err()}
		}
	case SingleCheckErrorUntyped:
		if c.Validate() != nil {
			return domain.Decision{}, errInvalidCheck
		}
	case SingleCheckDecisionBesideError:
		d, err := s.admitCheck(ctx, c)
		s.lastMu.Lock()
		defer s.lastMu.Unlock()
		if err != nil {
			// The defect: the last decision goes out with the error.
			return s.lastDecision, err
		}
		s.lastDecision = d
		return d, nil
	}
	return s.admitCheck(ctx, c)
}

// decisionBesideError is what admitCheck returns beside an error: the
// zero Decision, or with LateCancelDecisionBesideError the decision d
// the check computed.
func (s *Store) decisionBesideError(d domain.Decision) domain.Decision {
	if s.cfg.Fault == LateCancelDecisionBesideError {
		return d
	}
	return domain.Decision{}
}

// dropsCancelledWrite reports whether a single check, evaluated, gives up
// its write because its context was cancelled meanwhile
// (LateCancelDecisionBesideError).
func (a *admission) dropsCancelledWrite() bool {
	return a.single && a.s.cfg.Fault == LateCancelDecisionBesideError && a.ctx.Err() != nil
}

// doneContextError is the error of an admission of k whose ctx is done on
// an open store, when the store's fault makes one of its own, or nil.
func (s *Store) doneContextError(ctx context.Context, k domain.CounterKey) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if err := s.doneContext28(err); err != nil {
		return err // hunt28.go
	}
	b := k.Bytes()
	switch s.cfg.Fault {
	case DoneContextErrorMatchesClosed:
		return &Error{Op: "admit", Err: fmt.Errorf("%w: %w", ports.ErrClosed, err)}
	case DoneContextErrorKeyLittleEndianHex:
		return &Error{Op: "admit", Err: fmt.Errorf("slot %x: %w", binary.LittleEndian.Uint64(b[40:48]), err)}
	case DoneContextErrorKeyDecimal:
		return &Error{Op: "admit", Err: fmt.Errorf("subject %s: %w", new(big.Int).SetBytes(b[32:]), err)}
	case DoneContextErrorKeyWords:
		return &Error{Op: "admit", Err: fmt.Errorf("bucket %d/%d: %w",
			binary.BigEndian.Uint32(b[32:36]), binary.BigEndian.Uint32(b[36:40]), err)}
	}
	return nil
}
