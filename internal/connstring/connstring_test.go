package connstring_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/connstring"
)

func TestMisplaced(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]bool{
		// pgx ends the user information at the first "@" before a "/".
		"postgres://app:pa@ss@db/app":             true,
		"POSTGRESQL://app:pa@ss@db/app":           true,
		"postgres://app:pa@ss@h1,h2:5433/app":     true,
		"postgres://h?user=app@server&password=x": true,
		"postgres://h?password=x&user=app@server": true,
		"postgres://app:5433/pa55@db/app":         true,
		"postgres://app:5433?pa55@db/app":         true,
		"postgres://app@db/app#x@y":               true,
		"postgres://app:/?x=pa55@db":              true,
		"postgres://app:/?=0@127.0.0.1:1":         true,
		"postgres://app:@?=@127.0.0.1:1":          true,
		"postgres://app:pw@db?user=app@server":    true,
		// As meant.
		"postgres://app:pa%40ss@db/app":                     false,
		"postgres://db:5432/app?user=app@server&password=x": false,
		"postgres://app@[2001:db8::1]:5432,db2/app":         false,
		"postgres://app@db/team%40app":                      false,
		"host=db user=app password=pa@ss":                   false,
	} {
		require.Equal(t, want, connstring.Misplaced(dsn), dsn)
	}
}

func TestSwallowedPassword(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]bool{
		"host=db user= password=pw dbname=app":             true,
		"host=db user=app dbname= password=pw":             true,
		"host= password=pw user=app":                       true,
		"host=db user=app application_name= PASSWORD=pw":   true,
		"host=db user=app application_name='' password=pw": false,
		"host=db user=app dbname=passwords password=pw":    false,
		"postgres://app:pw@db/app?application_name=":       false,
	} {
		cc, err := pgconn.ParseConfig(dsn)
		require.NoError(t, err, dsn)
		require.Equal(t, want, connstring.SwallowedPassword(cc), dsn)
	}
}
