package domain_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/domain"
)

func TestNewPolicyAccepts(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name   string
		limit  int64
		window time.Duration
	}{
		{"limit 1", 1, time.Second},
		{"MaxLimit", domain.MaxLimit, time.Second},
		{"window 1ms", 7, time.Millisecond},
		{"MaxWindow", 7, domain.MaxWindow},
		{"both maximal", domain.MaxLimit, domain.MaxWindow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPolicy(t, "auth.login", "identity", tc.limit, tc.window)
			require.False(t, p.IsZero())
			require.Equal(t, "auth.login", p.ID().String())
			require.Equal(t, "identity", p.Scope().String())
			require.Equal(t, tc.limit, p.Limit())
			require.Equal(t, tc.window, p.Window())
			require.Equal(t, domain.Enforce, p.Mode())
		})
	}
}

func TestMaxBounds(t *testing.T) {
	t.Parallel()
	// The portable bounds are part of the compatibility contract.
	require.Equal(t, int64(9223372036854775807), domain.MaxLimit)
	require.Equal(t, int64(9007199254740), domain.MaxWindow.Milliseconds())
}

func TestNewPolicyRejects(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name    string
		limit   int64
		window  time.Duration
		problem domain.PolicyProblem
		text    string
	}{
		{"limit 0", 0, time.Second, domain.LimitOutOfRange, "limit 0 is outside 1..9223372036854775807"},
		{"limit -1", -1, time.Second, domain.LimitOutOfRange, "limit -1 is outside"},
		{"limit MinInt64", math.MinInt64, time.Second, domain.LimitOutOfRange, "is outside"},
		{"limit checked before window", 0, 0, domain.LimitOutOfRange, "limit 0"},
		{"window 0", 1, 0, domain.WindowNotPositive, "window 0s is not positive"},
		{"window negative", 1, -time.Second, domain.WindowNotPositive, "window -1s is not positive"},
		{"window 1ns", 1, time.Nanosecond, domain.WindowNotWholeMilliseconds, "window 1ns is not a whole number of milliseconds"},
		{"window 999µs", 1, 999 * time.Microsecond, domain.WindowNotWholeMilliseconds, "not a whole number"},
		{"window 1.5ms", 1, 1500 * time.Microsecond, domain.WindowNotWholeMilliseconds, "window 1.5ms"},
		{"window MaxWindow+1ms", 1, domain.MaxWindow + time.Millisecond, domain.WindowTooLarge, "exceeds the maximum of 9007199254740 ms"},
		{"window MaxInt64", 1, math.MaxInt64, domain.WindowNotWholeMilliseconds, "not a whole number"},
		{"window largest whole ms", 1, math.MaxInt64 / time.Millisecond * time.Millisecond, domain.WindowTooLarge, "exceeds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id, err := domain.NewPolicyID("auth.login")
			require.NoError(t, err)
			scope, err := domain.NewScopeID("identity")
			require.NoError(t, err)

			p, err := domain.NewPolicy(id, scope, tc.limit, tc.window)
			require.True(t, p.IsZero())
			require.ErrorIs(t, err, domain.ErrInvalidPolicy)
			require.ErrorIs(t, err, domain.ErrInvalidInput)
			require.NotErrorIs(t, err, domain.ErrInvalidIdentifier)
			var pe *domain.PolicyError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tc.problem, pe.Problem)
			require.ErrorContains(t, err, tc.text)
			switch tc.problem {
			case domain.LimitOutOfRange:
				require.Equal(t, tc.limit, pe.Limit)
			default:
				require.Equal(t, tc.window, pe.Window)
			}
		})
	}
}

func TestNewPolicyRejectsZeroIdentifiers(t *testing.T) {
	t.Parallel()
	id, err := domain.NewPolicyID("auth.login")
	require.NoError(t, err)
	scope, err := domain.NewScopeID("identity")
	require.NoError(t, err)

	cases := []struct {
		name  string
		id    domain.PolicyID
		scope domain.ScopeID
		field string
	}{
		{"zero policy id", domain.PolicyID{}, scope, "policy id"},
		{"zero scope id", id, domain.ScopeID{}, "scope id"},
		{"both zero names the policy id", domain.PolicyID{}, domain.ScopeID{}, "policy id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// An invalid limit too: identifiers are checked first.
			p, err := domain.NewPolicy(tc.id, tc.scope, 0, 0)
			require.True(t, p.IsZero())
			require.ErrorIs(t, err, domain.ErrInvalidIdentifier)
			require.ErrorIs(t, err, domain.ErrInvalidInput)
			var ie *domain.IdentifierError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, tc.field, ie.Field)
			require.Equal(t, domain.IdentifierEmpty, ie.Problem)
		})
	}
}

func TestPolicyWithMode(t *testing.T) {
	t.Parallel()
	p := newPolicy(t, "auth.login", "identity", 5, time.Minute)

	shadow, err := p.WithMode(domain.Shadow)
	require.NoError(t, err)
	require.Equal(t, domain.Shadow, shadow.Mode())
	require.Equal(t, domain.Enforce, p.Mode(), "WithMode returns a copy")
	require.Equal(t, p.Fingerprint(), shadow.Fingerprint(), "the mode is not part of the fingerprint")

	back, err := shadow.WithMode(domain.Enforce)
	require.NoError(t, err)
	require.Equal(t, p, back)

	for _, mode := range []domain.Mode{2, 3, math.MaxUint8} {
		got, err := p.WithMode(mode)
		require.True(t, got.IsZero())
		require.ErrorIs(t, err, domain.ErrInvalidPolicy)
		require.ErrorIs(t, err, domain.ErrInvalidInput)
		var pe *domain.PolicyError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, domain.ModeUnknown, pe.Problem)
		require.Equal(t, mode, pe.Mode)
		require.ErrorContains(t, err, "unknown quota mode")
	}
}

func TestModeString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "enforce", domain.Enforce.String())
	require.Equal(t, "shadow", domain.Shadow.String())
	require.Equal(t, "unknown", domain.Mode(9).String())
	require.Equal(t, domain.Enforce, domain.Mode(0), "enforce is the zero mode, the default")
}

// fingerprintFromSpec builds the fingerprint input byte by byte from the
// SPEC text, independently of the implementation.
func fingerprintFromSpec(id, scope string, limit int64, window time.Duration) [32]byte {
	var msg []byte
	msg = append(msg, "runlimit/fixed-window-policy/v1"...)
	msg = append(msg, 0x00)
	msg = append(msg, id...)
	msg = append(msg, 0x00)
	msg = append(msg, scope...)
	msg = append(msg, 0x00)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(limit))
	msg = append(msg, n[:]...)
	binary.BigEndian.PutUint64(n[:], uint64(window.Milliseconds()))
	msg = append(msg, n[:]...)
	return sha256.Sum256(msg)
}

func TestFingerprintLayout(t *testing.T) {
	t.Parallel()

	long := strings.Repeat("L", domain.MaxIdentifierLength)
	cases := []struct {
		name, id, scope string
		limit           int64
		window          time.Duration
	}{
		{"small", "a", "b", 1, time.Millisecond},
		{"typical", "auth.login", "identity", 8, time.Minute},
		{"maximal", long, long, domain.MaxLimit, domain.MaxWindow},
		{"punctuation", "-._:/", "/:_.-", 1 << 40, 1234567 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPolicy(t, tc.id, tc.scope, tc.limit, tc.window)
			want := fingerprintFromSpec(tc.id, tc.scope, tc.limit, tc.window)
			require.Equal(t, domain.Fingerprint(want), p.Fingerprint())
			require.Equal(t, hex.EncodeToString(want[:]), p.Fingerprint().String())
		})
	}
}

// Literal fingerprints pin the compatibility contract with Runlimit for
// Rust. They were computed once outside Go, with Python's hashlib:
//
//	sha256(b"runlimit/fixed-window-policy/v1\0" + id + b"\0" + scope + b"\0"
//	       + struct.pack(">q", limit) + struct.pack(">Q", window_ms))
//
// and cross-checked against fingerprintFromSpec. A change to either
// construction breaks this test.
func TestFingerprintVectors(t *testing.T) {
	t.Parallel()

	cases := []struct {
		id, scope string
		limit     int64
		window    time.Duration
		want      string
	}{
		{"auth.login", "identity", 8, time.Minute, "916a0fdb38078d25854fd8f591d0b5c619abd4fd93d327efbf7f0ce4d45bfe51"},
		{"a", "b", domain.MaxLimit, domain.MaxWindow, "fc1b4d349e9d8d878d5c719cc7bd755773ee03c2498ce5adaa984cfc0c808576"},
	}
	for _, tc := range cases {
		p := newPolicy(t, tc.id, tc.scope, tc.limit, tc.window)
		require.Equal(t, tc.want, p.Fingerprint().String())
		want := fingerprintFromSpec(tc.id, tc.scope, tc.limit, tc.window)
		require.Equal(t, tc.want, hex.EncodeToString(want[:]))
	}
}

func TestFingerprintSeparatesEveryField(t *testing.T) {
	t.Parallel()

	base := newPolicy(t, "ab", "c", 8, time.Minute)
	others := map[string]domain.Policy{
		"policy id":                newPolicy(t, "abc", "c", 8, time.Minute),
		"scope id":                 newPolicy(t, "ab", "cd", 8, time.Minute),
		"id/scope boundary":        newPolicy(t, "a", "bc", 8, time.Minute),
		"limit":                    newPolicy(t, "ab", "c", 9, time.Minute),
		"window":                   newPolicy(t, "ab", "c", 8, time.Minute+time.Millisecond),
		"limit and window swapped": newPolicy(t, "ab", "c", time.Minute.Milliseconds(), 8*time.Millisecond),
	}
	for name, other := range others {
		require.NotEqual(t, base.Fingerprint(), other.Fingerprint(), name)
	}
	require.Equal(t, base.Fingerprint(), newPolicy(t, "ab", "c", 8, time.Minute).Fingerprint())
}
