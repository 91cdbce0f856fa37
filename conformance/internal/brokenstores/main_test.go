package brokenstores_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails a passing run that leaves goroutines behind: a broken store's goroutines must end with the case that caught it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
