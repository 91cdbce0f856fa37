package brokenstores

import (
	"context"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// probe is the check ReadyAdmitsProbe admits to prove the store works.
var probe = domain.NewCheck(domain.MustPolicy("brokenstores.ready", "probe", domain.MaxLimit, time.Millisecond),
	domain.SubjectKeyFromBytes([32]byte{0: 'r', 1: 'e', 2: 'a', 3: 'd', 4: 'y'}))

// Ready reports whether an admission could run now: nil unless ctx is nil
// or done, or the store is closed ([ports.ReadinessChecker]).
func (s *Store) Ready(ctx context.Context) error {
	if err, ok := s.readyBefore(ctx); ok {
		return err
	}
	if err := s.nilContext("ready", ctx); err != nil {
		return err
	}
	if s.closed.Load() && s.cfg.Fault != ReadyAfterClose {
		return &Error{Op: "ready", Err: ports.ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return &Error{Op: "ready", Err: err}
	}
	if s.cfg.Fault == ReadyAdmitsProbe {
		// The defect: the probe is a real admission, of a key that then
		// holds a slot.
		_, err := s.AdmitCheck(ctx, probe)
		return err
	}
	return nil
}
