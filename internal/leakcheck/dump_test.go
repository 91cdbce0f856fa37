package leakcheck_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/leakcheck"
)

// buried holds its secret three pointers deep, past what fmt's bad-verb
// path prints and far from any line a testify diff shows.
type buried struct {
	Name  string
	inner *struct{ next *deep }
}

func TestCheckDumpCatchesWhatDiffsCut(t *testing.T) {
	t.Parallel()
	var st state
	copy(st.b[:], secret)
	v := buried{Name: "n", inner: &struct{ next *deep }{&deep{st: &st}}}

	r := &fatalRecorder{TB: t}
	leakcheck.CheckDump(r, "buried", v, secret)
	require.NotEmpty(t, r.failed, "the whole dump reaches the secret")

	r = &fatalRecorder{TB: t}
	leakcheck.CheckDump(r, "redacted", redacted{}, secret)
	require.Empty(t, r.failed)
}
