package wiring_test

import (
	"testing"

	"github.com/runlimit/runlimit/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
