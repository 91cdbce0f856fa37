package postgres

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The search_path is judged as written: a schema named before pg_catalog
// is unsafe whether or not it exists (see checkSettings).
func TestCatalogFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path string
		safe bool
	}{
		{`"$user", public`, true},
		{``, true},
		{`""`, true},
		{`public`, true},
		{`pg_catalog`, true},
		{`pg_catalog, pg_temp`, true},
		{`pg_temp, pg_catalog, "$user"`, true},
		{` PG_Catalog , later`, true},
		{`"pg_catalog", later`, true},
		{`later, pg_catalog`, false},
		{`"$user", pg_catalog, public`, false},
		{`"PG_CATALOG", pg_catalog`, false},
		{`"pg_temp", pg_catalog`, true},
		{`pg_temp_3, pg_catalog`, false},
		{`"", pg_catalog`, false},
		{`"a,pg_catalog", pg_catalog`, false},
		{`"a""b", pg_catalog`, false},
		{`"a""b"`, true},
		{"later,\tpg_catalog", false},
		// Lists the server never accepts are not judged safe.
		{`"later, pg_catalog`, false},
		{`later,, pg_catalog`, false},
		{`later pg_catalog`, false},
		{`pg_catalog,`, false},
	} {
		require.Equal(t, tc.safe, catalogFirst(tc.path), "%q", tc.path)
		err := checkSettings("origin", tc.path)
		if tc.safe {
			require.NoError(t, err, "%q", tc.path)
			continue
		}
		require.ErrorIs(t, err, ErrUnsafeSetting, "%q", tc.path)
	}
	require.ErrorIs(t, checkSettings("replica", "pg_catalog"), ErrUnsafeSetting)
}

// Names quoted as pgx quotes an identifier, joined into a list, split back
// into themselves.
func FuzzSplitIdentifiers(f *testing.F) {
	f.Add("later", "pg_catalog", `a"b`)
	f.Add("$user", "public", "")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		var quoted []string
		var want []string
		for _, name := range []string{a, b, c} {
			if strings.IndexByte(name, 0) >= 0 {
				return
			}
			quoted = append(quoted, pgx.Identifier{name}.Sanitize())
			want = append(want, name)
		}
		got, ok := splitIdentifiers(strings.Join(quoted, " ,\t"))
		if !ok {
			t.Fatalf("%q: not split", quoted)
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("%q: got %q", quoted, got)
		}
		// Any input: no panic, and a list that names pg_catalog only
		// after another schema is never safe.
		_ = catalogFirst(a)
		if a+"x" != "pg_temp" && catalogFirst(pgx.Identifier{a + "x"}.Sanitize()+", pg_catalog") {
			t.Fatalf("%q before pg_catalog judged safe", a+"x")
		}
	})
}
