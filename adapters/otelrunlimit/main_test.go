package otelrunlimit_test

import (
	"testing"

	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestMain runs the tests on pgtest's PostgreSQL server.
func TestMain(m *testing.M) { pgtest.Main(m) }
