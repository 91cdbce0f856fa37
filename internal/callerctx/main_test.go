package callerctx_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails a passing run that leaves goroutines behind: a bound context's AfterFunc must be stopped by its release.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
