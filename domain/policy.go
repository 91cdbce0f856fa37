package domain

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Portable bounds shared by every store: any policy the domain accepts can be
// represented by both the memory and the PostgreSQL store.
const (
	// MaxLimit is the largest limit; it fits a signed 64-bit column.
	MaxLimit int64 = math.MaxInt64
	// MaxWindow is the longest window, 9,007,199,254,740 ms (about 285 years).
	MaxWindow = 9_007_199_254_740 * time.Millisecond
)

// Mode says whether a policy enforces its quota or only reports it.
type Mode uint8

const (
	// Enforce denies requests over the limit. It is the default.
	Enforce Mode = iota
	// Shadow lets requests over the limit through, reporting them as
	// shadow-denied, so a new policy can be observed before it is enforced.
	Shadow
)

// String returns "enforce" or "shadow".
func (m Mode) String() string {
	switch m {
	case Enforce:
		return "enforce"
	case Shadow:
		return "shadow"
	}
	return "unknown"
}

// GoString returns the constant's name.
func (m Mode) GoString() string {
	switch m {
	case Enforce:
		return "domain.Enforce"
	case Shadow:
		return "domain.Shadow"
	}
	return "domain.Mode(" + strconv.Itoa(int(m)) + ")"
}

// Policy is a validated fixed-window policy: at most Limit units per anchored
// Window, per subject, counted separately for each policy and scope.
//
// The zero value is invalid; build one with [NewPolicy]. Copies share one
// immutable definition, so compare policies with [Policy.Equal]: == reports
// whether two values are copies of one NewPolicy result.
type Policy struct {
	// def is shared by every copy, so a Policy (and a Check holding one)
	// stays two words wide on the admission path. It is nil in the zero
	// Policy and never changes after NewPolicy.
	def  *policyDef
	mode Mode
}

type policyDef struct {
	id          PolicyID
	scope       ScopeID
	limit       int64
	window      time.Duration
	fingerprint Fingerprint
	// keyPrefix is what a subject key's MAC covers before the subject:
	// "runlimit/subject-key/v1", 0x00, the policy id, 0x00, the scope id,
	// 0x00. It is public, built once here for every key derived under the
	// policy.
	keyPrefix string
}

// NewPolicy validates a fixed-window policy in enforce mode. The limit is
// checked before the window.
func NewPolicy(id PolicyID, scope ScopeID, limit int64, window time.Duration) (Policy, error) {
	if err := validateIdentifier("policy id", id.s); err != nil {
		return Policy{}, err
	}
	if err := validateIdentifier("scope id", scope.s); err != nil {
		return Policy{}, err
	}
	if limit < 1 {
		return Policy{}, &PolicyError{Problem: LimitOutOfRange, Limit: limit}
	}
	switch {
	case window <= 0:
		return Policy{}, &PolicyError{Problem: WindowNotPositive, Window: window}
	case window%time.Millisecond != 0:
		return Policy{}, &PolicyError{Problem: WindowNotWholeMilliseconds, Window: window}
	case window > MaxWindow:
		return Policy{}, &PolicyError{Problem: WindowTooLarge, Window: window}
	}
	return Policy{def: &policyDef{
		id:          id,
		scope:       scope,
		limit:       limit,
		window:      window,
		fingerprint: fingerprintOf(id.s, scope.s, limit, window),
		keyPrefix:   subjectKeyDomain + "\x00" + id.s + "\x00" + scope.s + "\x00",
	}}, nil
}

// WithMode returns a copy of p in the given mode. The mode is not part of the
// fingerprint: switching modes keeps the counters. Its only error is a
// *PolicyError (ModeUnknown) for a mode other than Enforce and Shadow, so a
// policy built by MustPolicy can be switched in the same expression:
//
//	signup, err := domain.MustPolicy("auth.signup", "client", 3, time.Hour).WithMode(domain.Shadow)
func (p Policy) WithMode(mode Mode) (Policy, error) {
	if mode != Enforce && mode != Shadow {
		return Policy{}, &PolicyError{Problem: ModeUnknown, Mode: mode}
	}
	p.mode = mode
	return p, nil
}

// ID returns the policy identifier.
func (p Policy) ID() PolicyID {
	if p.def == nil {
		return PolicyID{}
	}
	return p.def.id
}

// Scope returns the scope identifier.
func (p Policy) Scope() ScopeID {
	if p.def == nil {
		return ScopeID{}
	}
	return p.def.scope
}

// Limit returns the number of units allowed per window.
func (p Policy) Limit() int64 {
	if p.def == nil {
		return 0
	}
	return p.def.limit
}

// Window returns the window length.
func (p Policy) Window() time.Duration {
	if p.def == nil {
		return 0
	}
	return p.def.window
}

// Mode returns the quota mode.
func (p Policy) Mode() Mode { return p.mode }

// Fingerprint returns the SHA-256 fingerprint of the policy's identity.
func (p Policy) Fingerprint() Fingerprint {
	if p.def == nil {
		return Fingerprint{}
	}
	return p.def.fingerprint
}

// IsZero reports whether p is the zero value rather than a validated policy.
func (p Policy) IsZero() bool { return p.def == nil }

// String describes the policy, such as
// "auth.login/client: 40 per 1m0s (enforce)".
func (p Policy) String() string {
	if p.def == nil {
		return "Policy(zero)"
	}
	return fmt.Sprintf("%s/%s: %d per %v (%s)", p.def.id.s, p.def.scope.s, p.def.limit, p.def.window, p.mode)
}

// GoString is String.
func (p Policy) GoString() string { return p.String() }

// Equal reports whether p and q are the same policy in the same mode. It
// compares what the policy means, not where it is stored.
func (p Policy) Equal(q Policy) bool {
	if p.def == nil || q.def == nil {
		return p.def == q.def && p.mode == q.mode
	}
	return *p.def == *q.def && p.mode == q.mode
}

// Fingerprint identifies a policy's counters. It is SHA-256 over
// "runlimit/fixed-window-policy/v1", 0x00, the policy id, 0x00, the scope id,
// 0x00, the limit as 8 bytes big-endian and the window in milliseconds as
// 8 bytes big-endian. Changing any of these starts an independent counter.
//
// The layout is a compatibility contract with Runlimit for Rust.
type Fingerprint [32]byte

// String returns the fingerprint in hexadecimal. A fingerprint is derived from
// public configuration only, so it is safe to log.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

const fingerprintDomain = "runlimit/fixed-window-policy/v1"

func fingerprintOf(id, scope string, limit int64, window time.Duration) Fingerprint {
	h := sha256.New()
	var buf [len(fingerprintDomain) + 3 + 2*MaxIdentifierLength + 16]byte
	b := append(buf[:0], fingerprintDomain...)
	b = append(b, 0)
	b = append(b, id...)
	b = append(b, 0)
	b = append(b, scope...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(limit))
	b = binary.BigEndian.AppendUint64(b, uint64(window/time.Millisecond))
	h.Write(b)
	var f Fingerprint
	h.Sum(f[:0])
	return f
}
