package postgres

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/migrations"
)

// schemaConfigError matches every error a refused Config.Schema gives: the
// check's problem, never the name.
var schemaConfigError = regexp.MustCompile(`^runlimit: invalid postgres store config: Schema is rejected \((it is empty|it is \d+ bytes long, want at most 63|it starts with a digit|names starting with pg_ belong to PostgreSQL|byte \d+ is not an ASCII letter, digit or underscore)\), want 1 to 63 ASCII letters, digits and underscores, not starting with a digit or pg_ \(empty means "public"\)$`)

// FuzzStoreSchema configures a store with a schema name of any bytes. The
// store accepts exactly the names migrations.CheckSchema does (and "" as
// public); a refused name is never repeated by its error. An accepted name
// reaches the SQL only as a quoted identifier qualifying one of Runlimit's
// objects: every statement is the one rendered for a marker schema, whose
// every occurrence is a quoted qualifier, with the marker replaced by the
// name, and no placeholder is left. Statement names are distinct and short
// enough that PostgreSQL keeps them whole.
func FuzzStoreSchema(f *testing.F) {
	for _, s := range []string{
		"", "public", "limits", "_x", "Runlimit_2", "runlimit_fixed_windows", "pg_catalog", "PG_temp", "9lives",
		`a"b`, `x"; DROP TABLE runlimit_fixed_windows; --`, "a.b", "a b", "é", "a\x00", "{windows}",
		strings.Repeat("s", 63), strings.Repeat("s", 64), "postgres://app:S3cr3t-pa55w0rd@db/app",
	} {
		f.Add(s)
	}
	const marker = "zzfuzzmarkerzz"
	base := allSQL(newStatements(marker))
	for _, sql := range base {
		rest := strings.ReplaceAll(sql, `"`+marker+`".`, "")
		require.NotContains(f, rest, marker, "the schema outside a quoted qualifier: %s", sql)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		cfg, err := Config{Schema: schema}.withDefaults()
		accepted := schema == "" || migrations.CheckSchema(schema) == nil
		require.Equal(t, accepted, err == nil, "%q: %v", schema, err)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.Regexp(t, schemaConfigError, err.Error())
			return
		}
		if schema == "" {
			require.Equal(t, migrations.DefaultSchema, cfg.Schema)
			return
		}
		require.Equal(t, schema, cfg.Schema)
		st := newStatements(cfg.Schema)
		got := allSQL(st)
		require.Len(t, got, len(base))
		for i := range got {
			require.Equal(t, strings.ReplaceAll(base[i], `"`+marker+`"`, `"`+schema+`"`), got[i])
			for _, placeholder := range []string{"{windows}", "{ledger}", "{version_table}", "{lock_counter}"} {
				require.NotContains(t, got[i], placeholder)
			}
		}
		names := map[string]bool{}
		for _, p := range st.prepared {
			require.LessOrEqual(t, len(p.name), 63, p.name)
			names[p.name] = true
		}
		require.Len(t, names, stmtCount)
	})
}

// allSQL is every SQL text a store's statements hold, in a fixed order.
func allSQL(st *statements) []string {
	out := []string{st.cleanup, st.ledger, st.warmLock, st.sizes, st.versionTable, st.version}
	for _, p := range st.prepared {
		out = append(out, p.sql)
	}
	return out
}
