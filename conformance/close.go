package conformance

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/ports"
)

// closeScenario checks [ports.Closer] on stores that offer it: after Close,
// a check fails closed, with an error that consumed nothing and names no
// key.
func closeScenario() scenario {
	return scenario{name: "close", cases: []testCase{
		{name: "closed_store_fails_closed", run: testClosedStoreFailsClosed},
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
	require.NoError(t, c.Close(), "%s: Close failed", g)

	d, err := f.limiter.Check(f.ctx, f.check(p, k))
	require.Error(t, err, "%s: a closed store returned %s", g, describe(d))
	require.False(t, ports.MayHaveConsumedQuota(err), "%s: the error must say nothing was consumed: %v", g, err)

	// An error message may reach logs: it must not carry the key.
	b := k.Bytes()
	msg := err.Error()
	require.False(t, bytes.Contains([]byte(msg), b[:]), "%s: the error holds the subject key's bytes", g)
	require.False(t, strings.Contains(strings.ToLower(msg), hex.EncodeToString(b[:8])), "%s: the error holds the subject key in hex", g)
}
