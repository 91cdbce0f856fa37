package leakcheck_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/leakcheck"
)

// fatalRecorder is a testing.TB whose Fatalf records instead of stopping.
type fatalRecorder struct {
	testing.TB
	failed []string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

var secret = []byte{0x9c, 0x11, 0xfe, 0x42, 0x07, 0xa3, 0x5d, 0xe8, 0x31, 0x6b}

// leaky holds a secret where every printer can reach it.
type leaky struct{ Key []byte }

// hidden keeps its secret in an unexported field but prints it in String.
type hidden struct{ key []byte }

func (h hidden) String() string { return fmt.Sprintf("%x", h.key) }

// deep keeps its secret behind a pointer in an unexported field: only
// printers that walk unexported fields (spew, fmt's bad-verb path) reach it.
type deep struct{ st *state }

type state struct{ b [10]byte }

// redacted never prints its secret.
type redacted struct{ key [10]byte }

func (redacted) String() string               { return "[redacted]" }
func (redacted) GoString() string             { return "[redacted]" }
func (redacted) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte("[redacted]")) }
func (redacted) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }

func TestCheckCatchesLeaks(t *testing.T) {
	t.Parallel()
	var st state
	copy(st.b[:], secret)
	for name, v := range map[string]any{
		"exported field":     leaky{Key: secret},
		"String method":      hidden{key: secret},
		"unexported pointer": deep{st: &st},
	} {
		r := &fatalRecorder{TB: t}
		leakcheck.Check(r, name, v, secret)
		require.NotEmpty(t, r.failed, "%s: the leak was not caught", name)
	}
}

func TestCheckPassesRedactedValues(t *testing.T) {
	t.Parallel()
	var v redacted
	copy(v.key[:], secret)
	r := &fatalRecorder{TB: t}
	leakcheck.Check(r, "redacted", v, secret)
	// fmt and testify walk the unexported array through reflection in host
	// structs; that is the leak Check exists to find.
	require.NotEmpty(t, r.failed, "an unexported array is printed by reflection inside host structs")

	r = &fatalRecorder{TB: t}
	leakcheck.Check(r, "text", "nothing secret here", secret)
	require.Empty(t, r.failed)
}

func TestRenderingsCoverEveryWindow(t *testing.T) {
	t.Parallel()
	r := leakcheck.Renderings(secret)
	require.Contains(t, r, "9c11fe4207a3")
	require.Contains(t, r, "07A35DE8316B")
	require.Contains(t, r, "156 17 254 66 7 163")
	require.Contains(t, r, "0x9c, 0x11, 0xfe, 0x42, 0x7, 0xa3")
	require.Contains(t, r, "nBH+QgejXeg"[:8])
	short := leakcheck.Renderings([]byte("pw1"))
	require.Contains(t, short, "pw1")
}

// panicky is a value whose String method panics, as a method of a zero
// value that dereferences a nil field would.
type panicky struct{ p *int }

func (v panicky) String() string { return fmt.Sprint(*v.p) }

func TestCheckPrintableCatchesPanics(t *testing.T) {
	t.Parallel()
	r := &fatalRecorder{TB: t}
	leakcheck.CheckPrintable(r, "panicky", panicky{})
	require.NotEmpty(t, r.failed, "fmt's recovered panic is reported")

	r = &fatalRecorder{TB: t}
	leakcheck.CheckPrintable(r, "redacted", redacted{})
	require.Empty(t, r.failed)
}

// derefError's Error dereferences its receiver, as most errors' do.
type derefError struct{ msg string }

func (e *derefError) Error() string { return e.msg }

// A nil pointer in an error prints as fmt prints it, <nil>: CheckPrintable
// does not call its Error method itself, which no printer would.
func TestCheckPrintablePrintsANilErrorPointer(t *testing.T) {
	t.Parallel()
	r := &fatalRecorder{TB: t}
	leakcheck.CheckPrintable(r, "nil *derefError", (*derefError)(nil))
	require.Empty(t, r.failed)
	var err error = (*derefError)(nil)
	leakcheck.CheckPrintable(r, "nil *derefError in an error", err)
	require.Empty(t, r.failed)
}
