// Package exported is what leakcheck's tests read with Exported.
package exported

import (
	"errors"
	sb "strings"
)

// Kept is exported.
type Kept struct{ n int }

// Builder stands for strings.Builder.
type Builder = sb.Builder

// ErrGone is an exported error variable.
var ErrGone = errors.New("gone")

type hidden struct{}

var errHidden = errors.New("hidden")
