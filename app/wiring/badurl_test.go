package wiring_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
)

// A connection string pgx cannot parse (a misspelt scheme, a stray word)
// gets a config error that shows the forms it wants, and still never
// repeats what it was given.
func TestUnparsableDatabaseURLShowsTheWantedForm(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"postgress://runlimit:hunter2-secret@db.internal/app",
		"not a url hunter2-secret",
	} {
		_, err := wiring.New(context.Background(), wiring.Config{DatabaseURL: wiring.NewSecret(url), KeySecret: wiring.NewSecret(testSecret)})
		var ce *wiring.ConfigError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "DatabaseURL", ce.Field)
		require.Contains(t, err.Error(), "want postgres://USER:PASS@HOST:5432/DBNAME, or keyword/value pairs")
		require.NotContains(t, err.Error(), "hunter2")
	}
}
