package memory_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails a passing run that leaves goroutines behind: a CoarseClock's goroutine must end with Stop or with the clock.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
