package wiring_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// TestStartThatCannotMigrateIsAMigrateError: a role that may not create
// Runlimit's objects fails Start with a *MigrateError naming the schema,
// which a host tells apart from a store that is not ready or a bad config,
// whose text holds the server's reason and never the password, and which
// prints as its text under every printer.
func TestStartThatCannotMigrateIsAMigrateError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	// Since PostgreSQL 15 a role that does not own the database may not
	// create objects in public.
	role := db.NewRole(t, "fxred_nocreate")
	r, err := wiring.New(ctx, wiring.Config{
		DatabaseURL: wiring.NewSecret(role.URL), Migrate: true,
		KeySecret: wiring.NewSecret(testSecret),
	})
	require.NoError(t, err)
	err = r.Start(ctx)
	var me *wiring.MigrateError
	require.ErrorAs(t, err, &me)
	require.Equal(t, "public", me.Schema)
	require.ErrorContains(t, err, "permission denied")
	require.NotErrorIs(t, err, wiring.ErrInvalidConfig)
	var nre *wiring.NotReadyError
	require.False(t, errors.As(err, &nre), "a migration failure is not a readiness failure")
	require.ErrorIs(t, r.Ready(ctx), wiring.ErrClosed, "a failed start leaves a closed runtime")

	password := passwordOf(t, role.URL)
	text := me.Error()
	require.Contains(t, text, `runlimit: migrate schema "public": `)
	require.NotContains(t, text, password)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x"} {
		out := fmt.Sprintf(verb, me)
		require.NotContains(t, out, password, verb)
	}
	require.Equal(t, text, fmt.Sprintf("%d", me))
	js, err := json.Marshal(me)
	require.NoError(t, err)
	require.NotContains(t, string(js), password)
	require.JSONEq(t, fmt.Sprintf(`{"schema":"public","error":%q}`, text), string(js))
}

// passwordOf returns the password of a URL.
func passwordOf(t *testing.T, u string) string {
	t.Helper()
	parsed, err := neturl.Parse(u)
	require.NoError(t, err)
	password, ok := parsed.User.Password()
	require.True(t, ok)
	require.NotEmpty(t, password)
	return password
}
