package conformance_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails a passing run that leaves goroutines behind: the suite's goroutines must all end with their cases, also against the broken stores its tests run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
