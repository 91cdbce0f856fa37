package pgerror_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/pgerror"
)

// eightHex is what Sanitize promises never to leave in a printed value: a
// run of hex digits long enough to spell key bytes.
var eightHex = regexp.MustCompile(`[0-9A-Fa-f]{8,}`)

// FuzzSanitize feeds Sanitize server errors with any field values, alone
// and wrapped, and requires that every printing of the result keeps the
// SQLSTATE, severity and constraint, holds no run of eight hex digits and
// no unprintable or non-ASCII character, and spells none of the fields
// Sanitize drops (detail, hint, context, internal query, schema, table,
// column, data type, routine) unless the kept fields spell it too.
func FuzzSanitize(f *testing.F) {
	f.Add("23505", "ERROR", "duplicate key value violates unique constraint \"k\"", `Key (subject_key)=(\x00112233445566778899aabbccddeeff) already exists.`,
		"hint", "PL/pgSQL function f() line 3", "SELECT 1", "k", "runlimit_fixed_windows", false)
	f.Add("57014", "ERROR", "canceling statement due to statement timeout", "", "", "", "", "", "", true)
	f.Add("28P01", "FATAL", `password authentication failed for user "app"`, "S3cr3t-pa55w0rd", "", "", "", "", "", false)
	f.Add("22023", "FATAL", `invalid value for parameter "TimeZone": "S3cr3t-pa55w0rd"`, "", "", "", "", "", "", true)
	f.Add("XX000", "PANIC", "deadbeefcafe\x00\x7f\u00e9\u2028", "\xff\xfe", "", "", "", "0123456789abcdef", "", false)
	f.Add("", "", "", "", "", "", "", "", "", false)
	f.Fuzz(func(t *testing.T, code, severity, message, detail, hint, where, query, constraint, table string, wrap bool) {
		pgErr := &pgconn.PgError{
			Code: code, Severity: severity, SeverityUnlocalized: severity, Message: message,
			Detail: detail, Hint: hint, Where: where, InternalQuery: query,
			SchemaName: table, TableName: table, ColumnName: table, DataTypeName: table, Routine: where,
			ConstraintName: constraint,
		}
		var err error = pgErr
		if wrap {
			err = fmt.Errorf("runlimit: admit: %w", pgErr)
		}
		got := pgerror.Sanitize(err)
		var e *pgerror.Error
		require.True(t, errors.As(got, &e), "%T", got)
		require.Equal(t, code, e.Code)
		require.Equal(t, severity, e.Severity)
		require.Equal(t, code, e.SQLState())

		// What a reader may legitimately see: the same error sanitized
		// from a server error without the fields Sanitize drops.
		var neutral error = &pgconn.PgError{Code: code, Severity: severity, SeverityUnlocalized: severity, Message: message, ConstraintName: constraint}
		if wrap {
			neutral = fmt.Errorf("runlimit: admit: %w", neutral)
		}
		ne := pgerror.Sanitize(neutral)
		nj, _ := json.Marshal(ne)
		kept := fmt.Sprintf("%v %+v %#v %s", ne, ne, ne, nj)
		js, jerr := json.Marshal(e)
		require.NoError(t, jerr)
		prints := map[string]string{
			"Error":          e.Error(),
			"Message":        e.Message,
			"ConstraintName": e.ConstraintName,
			"%+v":            fmt.Sprintf("%+v", e),
			"%#v":            fmt.Sprintf("%#v", e),
		}
		// The code and severity are the server's own words, kept as sent.
		for name, s := range map[string]string{"Error": strings.ReplaceAll(strings.ReplaceAll(e.Error(), severity, ""), code, ""), "Message": e.Message, "ConstraintName": e.ConstraintName} {
			require.False(t, eightHex.MatchString(s), "%s holds a hex run: %q", name, s)
			require.Equal(t, -1, strings.IndexFunc(s, func(r rune) bool {
				return r > 0x7e || r < 0x20 && r != '\n' && r != '\t'
			}), "%s holds an unprintable character: %q", name, s)
		}
		prints["json"] = string(js)
		for field, v := range map[string]string{"Detail": detail, "Hint": hint, "Where": where, "InternalQuery": query, "TableName": table} {
			if len(v) < 4 || strings.Contains(kept, v) {
				continue
			}
			for name, s := range prints {
				require.NotContains(t, s, v, "%s spells the dropped %s", name, field)
			}
		}
	})
}
