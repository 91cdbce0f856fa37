package runlimitfx_test

import (
	"log/slog"
	"testing"

	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestMain quiets the default logger, which Runtimes without a
// Config.Logger write their start and stop records to, and runs the tests.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	pgtest.Main(m)
}
