package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails a passing run that leaves goroutines behind: run must
// stop its server, its runtime and its exporter before it returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
