package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgtest"
	"github.com/runlimit/runlimit/migrations"
)

// TestPlantedNameIsPrintedEscaped: the error that refuses a schema in which
// another role planted an object under one of Runlimit's names quotes the
// object's name, which that role chose. A quoted identifier may hold any
// character but NUL, and the name went into the error as it was: a role
// holding only CREATE on the schema could put a terminal's escape
// sequences (an OSC 52 that writes the operator's clipboard, a title, a
// hyperlink) or a newline and a forged record into the text that
// "runlimit migrate", "status" and "cleanup" print, the store's readiness
// error and the service's logs. Such a name is now printed escaped, as
// Go's %+q spells it, in every error that names it.
func TestPlantedNameIsPrintedEscaped(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := context.Background()
	role := db.NewRole(t, "hostile")
	_, err := db.Pool.Exec(ctx, "CREATE SCHEMA shared; GRANT CREATE, USAGE ON SCHEMA shared TO "+pgx.Identifier{role.Name}.Sanitize())
	require.NoError(t, err)
	const name = "runlimit_\x1b]52;c;cm0gLXJmIH4=\x07\nlevel=INFO msg=ok é"
	_, err = role.NewPool(t, nil).Exec(ctx, `CREATE FUNCTION shared.`+pgx.Identifier{name}.Sanitize()+`() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$`)
	require.NoError(t, err)

	for what, err := range map[string]error{
		"MigratePool": migrations.MigratePool(ctx, db.Pool, "shared"),
		"CheckOwners": migrations.CheckOwners(ctx, db.Pool, "shared"),
	} {
		require.ErrorIs(t, err, migrations.ErrUntrustedSchema, what)
		text := err.Error()
		i := strings.IndexFunc(text, func(r rune) bool { return r < 0x20 || r >= 0x7f })
		require.Negative(t, i, "%s: the error holds a control or non-ASCII character: %q", what, text)
		require.Contains(t, text, `"runlimit_\x1b]52;c;cm0gLXJmIH4=\a\nlevel=INFO msg=ok \u00e9" in schema "shared"`, what)
	}
}
