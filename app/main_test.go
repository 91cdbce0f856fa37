package app_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails a passing run that leaves goroutines behind: a limiter's bound contexts (callerctx) must be released.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
