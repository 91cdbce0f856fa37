package conformance

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// closeScenario checks [ports.Closer] on stores that offer it: after Close,
// a check fails closed, with an error that consumed nothing and names no
// key, on both paths.
func closeScenario() scenario {
	return scenario{name: "close", cases: []testCase{
		{name: "closed_store_fails_closed", single: true, run: testClosedStoreFailsClosed},
	}}
}

func testClosedStoreFailsClosed(t *testing.T, f *fixture) {
	const g = "close: after Close a check fails closed, consuming nothing"
	c, ok := f.inst.Store.(ports.Closer)
	if !ok {
		t.Skip("close: the store does not implement ports.Closer")
	}
	p, k := f.policy(2, window), f.key()
	f.allow(f.check(p, k), 1, g)
	f.rep.called(Closer)
	err := guard(c.Close)
	f.log.add("Close → %v", err)
	require.NoError(t, err, "%s: Close failed", g)

	d, err := f.apply(f.check(p, k), f.path)
	requireFailedClosed(t, err, k, g+" (a single check)", describe(d))
	bd, err := f.limiter.CheckAll(f.ctx, []domain.Check{f.check(p, f.key()), f.check(p, k)})
	f.log.add("batch via Admit → error: %v", err)
	requireFailedClosed(t, err, k, g+" (a batch)", describeBatch(bd))
}

func requireFailedClosed(t *testing.T, err error, k domain.SubjectKey, g, got string) {
	t.Helper()
	require.Error(t, err, "%s: a closed store returned %s", g, got)
	var pe *panicError
	require.False(t, errors.As(err, &pe), "%s: a closed store must return an error, not panic: %v", g, err)
	require.False(t, ports.MayHaveConsumedQuota(err), "%s: the error must say nothing was consumed: %v", g, err)
	// An error message may reach logs: it must not carry the key.
	b := k.Bytes()
	msg := err.Error()
	require.False(t, bytes.Contains([]byte(msg), b[:]), "%s: the error holds the subject key's bytes", g)
	require.False(t, strings.Contains(strings.ToLower(msg), hex.EncodeToString(b[:8])), "%s: the error holds the subject key in hex", g)
}
