package promfx_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails a passing run that leaves goroutines behind: the exporter's module must stop what it starts.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
