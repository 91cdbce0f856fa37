package migrations_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/migrations"
)

// usableSchema is CheckSchema's rule written out plainly.
var usableSchema = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// schemaErrorText matches every text CheckSchema's errors have.
var schemaErrorText = regexp.MustCompile(`^runlimit: invalid schema name: (it is empty|it is \d+ bytes long, want at most 63|it starts with a digit|names starting with pg_ belong to PostgreSQL|byte \d+ is not an ASCII letter, digit or underscore)$`)

// FuzzCheckSchema checks a schema name of any bytes against the rule
// written as a regular expression, and requires that SQL accepts exactly
// the names CheckSchema does, with the same error, and renders an accepted
// name only where the schema goes: its steps are those rendered for a
// marker name with the marker replaced by the name, and the marker is only
// ever a quoted identifier, which an accepted name cannot end.
func FuzzCheckSchema(f *testing.F) {
	for _, s := range []string{
		"public", "limits", "_x", "Runlimit_2", "pg_temp", "PG_x", "pg", "pgx", "9lives", "", "a-b", "a b",
		`a"b`, "a;DROP", "é", "a\x00", strings.Repeat("s", 63), strings.Repeat("s", 64), "runlimit_fixed_windows",
	} {
		f.Add(s)
	}
	const marker = "zzfuzzmarkerzz"
	base, err := migrations.SQL(marker)
	require.NoError(f, err)
	// The schema reaches the SQL only as a quoted identifier: an accepted
	// name, which holds no quote, cannot end it.
	for _, s := range base {
		for _, sql := range []string{s.Up, s.Down} {
			require.NotContains(f, strings.ReplaceAll(sql, `"`+marker+`"`, ""), marker, s.Name)
		}
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := migrations.CheckSchema(name)
		want := usableSchema.MatchString(name) && !strings.HasPrefix(strings.ToLower(name), "pg_")
		require.Equal(t, want, err == nil, "%q: %v", name, err)
		if err != nil {
			require.True(t, errors.Is(err, migrations.ErrInvalidSchema))
			// Its text is one of the fixed forms: it never quotes the name.
			require.Regexp(t, schemaErrorText, err.Error())
		}
		if name == "" {
			return // SQL renders the default schema
		}
		steps, sqlErr := migrations.SQL(name)
		if err != nil {
			require.Error(t, sqlErr)
			require.Equal(t, err.Error(), sqlErr.Error())
			return
		}
		require.NoError(t, sqlErr)
		require.NotContains(t, name, `"`)
		require.Len(t, steps, len(base))
		for i, s := range steps {
			require.Equal(t, strings.ReplaceAll(base[i].Up, marker, name), s.Up, s.Name)
			require.Equal(t, strings.ReplaceAll(base[i].Down, marker, name), s.Down, s.Name)
		}
	})
}
