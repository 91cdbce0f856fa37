package httplimit

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxIdentityLength is the longest identity [AppendIdentity] accepts, in
// bytes of its normalized form.
const MaxIdentityLength = 256

// maxIdentityInput bounds the work done on an identity before it is
// refused: folding shrinks a character's UTF-8 form at most threefold
// (U+212A KELVIN SIGN, 3 bytes, folds to "k").
const maxIdentityInput = 3 * MaxIdentityLength

// IdentityProblem says what is wrong with an identity.
type IdentityProblem uint8

// Identity problems, in the order they are checked.
const (
	IdentityEmpty IdentityProblem = iota + 1
	IdentityTooLong
	IdentityInvalidUTF8
	// IdentityControl: a control character (Unicode category Cc), a
	// format character (Cf: zero-width spaces and joiners, bidirectional
	// overrides, the byte order mark) or another default-ignorable code
	// point (variation selectors, the combining grapheme joiner, Hangul
	// fillers). They render as nothing and would let one identity be
	// spelled many ways: an account store that matches identities with
	// NFKC_Casefold deletes them all, and reaches one account from every
	// spelling while each would be counted apart.
	IdentityControl
)

// IdentityError reports an identity [AppendIdentity] refuses. It names a
// length or a byte offset, never the identity's text.
type IdentityError struct {
	Problem IdentityProblem
	Length  int // bytes after trimming, or after folding (IdentityTooLong)
	Offset  int // byte offset of the offending character, after trimming
}

func (e *IdentityError) Error() string {
	switch e.Problem {
	case IdentityEmpty:
		return "httplimit: identity is empty"
	case IdentityTooLong:
		return fmt.Sprintf("httplimit: identity is %d bytes long, at most %d allowed", e.Length, MaxIdentityLength)
	case IdentityInvalidUTF8:
		return fmt.Sprintf("httplimit: identity is not valid UTF-8 at byte %d", e.Offset)
	default:
		return fmt.Sprintf("httplimit: identity has a control or invisible character at byte %d", e.Offset)
	}
}

// Unwrap returns [ErrInvalidIdentity].
func (e *IdentityError) Unwrap() error { return ErrInvalidIdentity }

// AppendIdentity appends the normalized form of identity (an email, a user
// name, an account id) to dst, ready for a [domain.KeyHasher]. Two
// identities that differ only in surrounding white space or letter case
// give the same bytes, so an attacker cannot spread guesses for one account
// over many spellings of it. Exactly:
//
//  1. leading and trailing white space (unicode.IsSpace) is removed;
//  2. the rest must be valid UTF-8 with no control (Cc) or format (Cf)
//     character and no other default-ignorable code point (see
//     [IdentityControl]);
//  3. each character is replaced by one chosen member of its simple case
//     folding orbit, the set of characters unicode.SimpleFold cycles
//     through: the lower-case form of the orbit's smallest member when that
//     is in the orbit, else the smallest member. ASCII letters become lower
//     case; "K" (U+212A KELVIN SIGN) becomes "k", "ſ" (U+017F) becomes
//     "s" and final sigma becomes "σ". The Turkish and Azeri dotted
//     capital "İ" (U+0130) and dotless "ı" (U+0131) become "i": they fold
//     to themselves, but "İ" lower-cases to "i" and "ı" upper-cases to
//     "I" (strings.ToLower and strings.ToUpper, SQL's lower and upper),
//     so an account store that matches lower-cased or upper-cased
//     identities reaches the account "admin" from "admİn" and "admın";
//  4. the result must be 1 to [MaxIdentityLength] bytes long.
//
// Two valid identities therefore give the same bytes exactly when
// strings.EqualFold reports them equal after trimming and replacing "İ"
// and "ı" by "i"; and every character gives the bytes of its lower-case,
// upper-case and title-case forms, Turkish ones included. Interior white
// space is kept as it is. Folding more than an account store does is
// safe: spellings of two accounts then share one quota, which an attacker
// could exhaust for each account by its own spelling anyway; folding less
// is not, as every spelling the store merges would bring its own quota.
//
// The standard library has no Unicode normalization, so canonically
// equivalent spellings ("é" as one character or as "e" and a combining
// accent) stay different, and so do compatibility forms (fullwidth
// "ａｄｍｉｎ", the ligature "ﬁ"), full case folding, which turns one
// character into several ("ß" into "ss"), look-alikes from other scripts
// (Cyrillic "а"), and what only the account store knows to be one
// mailbox (an internationalized domain and its "xn--" form, a trailing
// dot, "+tag" sub-addresses). Apply the normalization your account store
// applies first (NFC or NFKC, golang.org/x/text/unicode/norm; full
// folding, golang.org/x/text/cases.Fold) when it treats them as one
// account: the quota an identity spends must be the one of the account
// it reaches.
//
// A refused identity is an [*IdentityError] naming an offset, never the
// text; answer it as a bad request, after a [Middleware] has counted the
// client.
func AppendIdentity(dst []byte, identity string) ([]byte, error) {
	s := strings.TrimSpace(identity)
	switch {
	case s == "":
		return dst, &IdentityError{Problem: IdentityEmpty}
	case len(s) > maxIdentityInput:
		return dst, &IdentityError{Problem: IdentityTooLong, Length: len(s)}
	}
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return dst, &IdentityError{Problem: IdentityInvalidUTF8, Offset: i}
			}
		}
		if invisible(r) {
			return dst, &IdentityError{Problem: IdentityControl, Offset: i}
		}
	}
	start := len(dst)
	for _, r := range s {
		dst = utf8.AppendRune(dst, foldRune(r))
	}
	if n := len(dst) - start; n > MaxIdentityLength {
		return dst[:start], &IdentityError{Problem: IdentityTooLong, Length: n}
	}
	return dst, nil
}

// invisible reports whether r is a control (Cc) or format (Cf) character,
// a variation selector or another default-ignorable code point: every
// Default_Ignorable_Code_Point of Unicode, and the controls and the few
// format characters that property leaves out.
func invisible(r rune) bool {
	if r < utf8.RuneSelf {
		return r < 0x20 || r == 0x7f
	}
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// foldRune maps r to the chosen member of its simple case folding orbit,
// and the Turkish dotted capital and dotless i to i.
func foldRune(r rune) rune {
	if r == '\u0130' || r == '\u0131' {
		// İ lower-cases to i and ı upper-cases to I, outside the folding
		// orbit of i: an account store that lower-cases or upper-cases
		// identities (strings.ToLower, SQL's lower) reaches the account of
		// "admin" from "admİn" and "admın", so they must share its quota.
		return 'i'
	}
	if r < utf8.RuneSelf {
		// Every ASCII orbit's chosen member is its ASCII lower-case letter,
		// even where the orbit holds non-ASCII members (k and K, s and ſ).
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	smallest := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		smallest = min(smallest, f)
	}
	if lower := unicode.ToLower(smallest); lower != smallest && sameOrbit(lower, smallest) {
		return lower
	}
	return smallest
}

func sameOrbit(a, b rune) bool {
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}
