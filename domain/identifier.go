package domain

// MaxIdentifierLength is the longest policy or scope identifier, in bytes.
const MaxIdentifierLength = 128

// PolicyID names a policy, such as "auth.login". It is 1 to 128 bytes of
// ASCII letters, digits and "-._:/", compared case-sensitively. The zero
// value is invalid; build one with [NewPolicyID].
type PolicyID struct{ s string }

// NewPolicyID validates s as a policy identifier.
func NewPolicyID(s string) (PolicyID, error) {
	if err := validateIdentifier("policy id", s); err != nil {
		return PolicyID{}, err
	}
	return PolicyID{s}, nil
}

// String returns the identifier.
func (id PolicyID) String() string { return id.s }

// ScopeID names a scope within a policy, such as "client" or "identity".
// It follows the same rules as [PolicyID].
type ScopeID struct{ s string }

// NewScopeID validates s as a scope identifier.
func NewScopeID(s string) (ScopeID, error) {
	if err := validateIdentifier("scope id", s); err != nil {
		return ScopeID{}, err
	}
	return ScopeID{s}, nil
}

// String returns the identifier.
func (id ScopeID) String() string { return id.s }

func validateIdentifier(field, s string) error {
	if s == "" {
		return &IdentifierError{Field: field, Problem: IdentifierEmpty}
	}
	if len(s) > MaxIdentifierLength {
		return &IdentifierError{Field: field, Problem: IdentifierTooLong, Length: len(s)}
	}
	for i := 0; i < len(s); i++ {
		if !identifierByte(s[i]) {
			return &IdentifierError{Field: field, Problem: IdentifierInvalidByte, Length: len(s), Offset: i}
		}
	}
	return nil
}

func identifierByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	case c == '-', c == '.', c == '_', c == ':', c == '/':
		return true
	}
	return false
}
