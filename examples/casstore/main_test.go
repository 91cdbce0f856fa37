package casstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails a passing run that leaves goroutines behind: the store starts none.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
