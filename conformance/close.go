package conformance

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// closeScenario checks [ports.Closer] on stores that offer it: after Close,
// a check fails closed on both paths, and cleanup (whatever its maximum
// and context, unless the caller made a mistake) and stats fail too, each
// with an error matching [ports.ErrClosed] that consumed nothing and names
// no key.
func closeScenario() scenario {
	return scenario{name: "close", cases: []testCase{
		{name: "closed_store_fails_closed", single: true, run: testClosedStoreFailsClosed},
		{name: "close_racing_an_admission_lets_it_finish", single: true, run: testCloseRacingAdmission},
		{name: "closed_error_is_no_callers_mistake", single: true, run: testClosedErrorIsNoCallersMistake},
	}}
}

func testClosedStoreFailsClosed(t *testing.T, f *fixture) {
	const g = "close: after Close a check fails closed, consuming nothing"
	p, k := f.closeAfterACheck(t, g)

	d, err := f.apply(f.check(p, k), f.path)
	requireFailedClosed(t, err, k, g+" (a single check)", describe(d))
	var bd domain.BatchDecision
	err = f.guard(func() (err error) {
		bd, err = f.limiter.CheckAll(f.ctx, []domain.Check{f.check(p, f.key()), f.check(p, k)})
		return err
	})
	f.log.add("batch via Admit → error: %v", err)
	requireFailedClosed(t, err, k, g+" (a batch)", describeBatch(bd))
	// A caller's mistake is reported as such, whatever the store's state.
	for _, bad := range []struct {
		name  string
		batch *domain.Batch
	}{{"a nil batch", nil}, {"the zero Batch", new(domain.Batch)}} {
		err := f.admitDirect(bad.batch, bad.name, g)
		require.ErrorIs(t, err, domain.ErrInvalidInput, "%s: Admit(%s) on a closed store is the caller's mistake", g, bad.name)
	}
	// So is a nil context, and an invalid single check. A context done
	// before the call is no caller's mistake: the store still says it is
	// closed (ports.Closer), so that a caller shutting down on ErrClosed
	// hears it.
	var nilCtx context.Context
	done, cancel := context.WithCancel(f.ctx)
	cancel()
	for _, dc := range []struct {
		name string
		ctx  context.Context
	}{{"nil ctx", nilCtx}, {"done ctx", done}} {
		b, err := domain.NewBatch([]domain.Check{f.check(p, k)}, f.opts.MaxBatchSize)
		require.NoError(t, err, "harness: a batch of one")
		f.admits.Add(1)
		f.rep.admits.Add(1)
		err = f.guard(func() error { return f.inst.Store.Admit(dc.ctx, b) })
		f.log.add("Admit(%s, batch [%s]) → error: %v", dc.name, f.log.check(f.check(p, k)), err)
		if dc.ctx == nil {
			require.ErrorIs(t, err, ports.ErrNilContext, "%s: Admit(nil ctx) on a closed store is the caller's mistake", g)
		} else {
			requireFailedClosed(t, err, k, g+" (Admit with a done ctx)", "no error")
		}
	}
	if ca, ok := f.inst.Store.(ports.CheckAdmitter); ok {
		invalid := domain.NewCheck(p, domain.SubjectKey{})
		for _, call := range []struct {
			name  string
			ctx   context.Context
			check domain.Check
		}{{"nil ctx", nilCtx, f.check(p, k)}, {"an invalid check", f.ctx, invalid}, {"done ctx", done, f.check(p, k)}} {
			f.rep.called(CheckAdmitter)
			var d domain.Decision
			err := f.guard(func() (err error) {
				d, err = ca.AdmitCheck(call.ctx, call.check)
				return err
			})
			f.log.add("AdmitCheck(%s) → %s, error: %v", call.name, describe(d), err)
			switch call.name {
			case "done ctx":
				requireFailedClosed(t, err, k, g+" (AdmitCheck with a done ctx)", describe(d))
			case "nil ctx":
				require.ErrorIs(t, err, ports.ErrNilContext, "%s: AdmitCheck(nil ctx) on a closed store is the caller's mistake", g)
			default:
				require.ErrorIs(t, err, domain.ErrInvalidInput, "%s: AdmitCheck(%s) on a closed store is the caller's mistake", g, call.name)
				require.NotErrorIs(t, err, ports.ErrClosed, "%s: AdmitCheck(%s) on a closed store is the caller's mistake", g, call.name)
			}
		}
	}
	if cleanup, ok := f.cleaner(); ok {
		n, err := cleanup(1)
		requireFailedClosed(t, err, k, g+" (CleanupExpired)", fmt.Sprintf("%d removed", n))
		require.Zero(t, n, "%s: CleanupExpired on a closed store removed %d", g, n)
		// A zero maximum too: the store's state is checked before a zero
		// maximum is answered, and before the context (see ports.Cleaner).
		n, err = cleanup(0)
		requireFailedClosed(t, err, k, g+" (CleanupExpired(0))", fmt.Sprintf("%d removed", n))
		n, err = f.cleanupWith(done, "done ctx", 1)
		requireFailedClosed(t, err, k, g+" (CleanupExpired(done ctx, 1))", fmt.Sprintf("%d removed", n))
		// A caller's mistake is reported as such, whatever the store's
		// state.
		_, err = cleanup(-1)
		require.ErrorIs(t, err, ports.ErrNegativeMax, "%s: CleanupExpired(-1) on a closed store", g)
		_, err = f.cleanupWith(nilCtx, "nil ctx", 1)
		require.ErrorIs(t, err, ports.ErrNilContext, "%s: CleanupExpired(nil ctx, 1) on a closed store", g)
	}
	if sr, ok := f.inst.Store.(ports.StatsReporter); ok {
		f.rep.called(StatsReporter)
		s, err := guardStats(f, sr)
		requireFailedClosed(t, err, k, g+" (Stats)", fmt.Sprintf("%+v", s))
	}
}

// guardStats calls Stats as the suite calls every store method: a panic
// comes back as an error.
func guardStats(f *fixture, sr ports.StatsReporter) (ports.Stats, error) {
	var s ports.Stats
	err := f.guard(func() (err error) {
		s, err = sr.Stats(f.ctx)
		return err
	})
	f.log.add("Stats → %+v, error: %v", s, err)
	return s, err
}

func requireFailedClosed(t *testing.T, err error, k domain.SubjectKey, g, got string) {
	t.Helper()
	require.Error(t, err, "%s: a closed store returned %s", g, got)
	var pe *panicError
	require.False(t, errors.As(err, &pe), "%s: a closed store must return an error, not panic: %v", g, err)
	require.False(t, ports.MayHaveConsumedQuota(err), "%s: the error must say nothing was consumed: %v", g, err)
	require.ErrorIs(t, err, ports.ErrClosed, "%s: the error must match ports.ErrClosed", g)
	// An error message may reach logs: it must not carry the key.
	b := k.Bytes()
	msg := err.Error()
	require.False(t, bytes.Contains([]byte(msg), b[:]), "%s: the error holds the subject key's bytes", g)
	require.False(t, strings.Contains(strings.ToLower(msg), hex.EncodeToString(b[:8])), "%s: the error holds the subject key in hex", g)
}

// closeAfterACheck counts one unit of a new key under a policy of two, then
// closes the store, and returns both; it skips the case when the store is
// not a [ports.Closer].
func (f *fixture) closeAfterACheck(t *testing.T, g string) (domain.Policy, domain.SubjectKey) {
	t.Helper()
	c, ok := f.inst.Store.(ports.Closer)
	if !ok {
		f.skip("close: the store does not implement ports.Closer")
	}
	p, k := f.policy(2, window), f.key()
	f.allow(f.check(p, k), 1, g)
	f.closeStore(c, g)
	return p, k
}

// closeStore closes the store through c, logs it, and fails the case if
// Close fails.
func (f *fixture) closeStore(c ports.Closer, g string) {
	f.t.Helper()
	f.rep.called(Closer)
	err := f.guard(c.Close)
	f.log.add("Close → %v", err)
	require.NoError(f.t, err, "%s: Close failed", g)
}
