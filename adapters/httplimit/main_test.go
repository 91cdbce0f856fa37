package httplimit_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails a passing run that leaves goroutines behind: the middleware starts none of its own; a test's servers must be closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
