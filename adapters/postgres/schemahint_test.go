package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgtest"
)

// A newcomer who opens a store before applying the schema meets its
// errors first, on Ready or on the first check: each says what to do,
// naming the ways to apply the schema (the wiring's variable too, for a
// host configured by its environment), and stays the typed error it was.
func TestMissingSchemaErrorsSayToMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		schema string
	}{
		{name: "empty database", schema: ""},
		{name: "a schema that does not exist", schema: "not_migrated_here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store, err := postgres.New(pgtest.NewEmpty(t).Pool, postgres.Config{Schema: tc.schema})
			require.NoError(t, err)

			err = store.Ready(ctx)
			var me *postgres.MaintenanceError
			require.ErrorAs(t, err, &me)
			require.Contains(t, err.Error(), "schema is missing: apply it first (migrations.MigratePool, `runlimit migrate`, or app/wiring's Config.Migrate, RUNLIMIT_MIGRATE=true in its environment)")
			require.Contains(t, err.Error(), "or point Config.Schema (RUNLIMIT_POSTGRES_SCHEMA) at the schema that holds it",
				"a host configured by wiring.ConfigFromEnv reads the variable it can set")

			hasher, err := domain.NewKeyHasher([]byte("runlimit postgres store tests, 32+ bytes of secret"))
			require.NoError(t, err)
			p := policy(t, "hint", 1, time.Hour)
			_, err = store.AdmitCheck(ctx, domain.NewCheck(p, hasher.KeyString(p, "subject")))
			var ae *postgres.AdmissionError
			require.ErrorAs(t, err, &ae)
			require.False(t, ae.MayHaveConsumed)
			require.Contains(t, err.Error(), "schema is missing: apply it first (migrations.MigratePool")
		})
	}
}

// Only an error saying an object does not exist gets the hint: a failure
// of a migrated schema, such as a timeout, must not send the operator to
// the migrations.
func TestSchemaHintOnlyForMissingObjects(t *testing.T) {
	t.Parallel()
	for code, hinted := range map[string]bool{
		"42P01": true,  // undefined_table
		"42883": true,  // undefined_function
		"3F000": true,  // invalid_schema_name
		"57014": false, // query_canceled
		"40P01": false, // deadlock_detected
		"":      false, // not from the server
	} {
		dbErr := &postgres.DatabaseError{Code: code}
		adm := &postgres.AdmissionError{Op: postgres.OpLock, Err: dbErr}
		mnt := &postgres.MaintenanceError{Op: "ready", Err: dbErr}
		for _, err := range []error{adm, mnt} {
			require.Equal(t, hinted, containsHint(err.Error()), "SQLSTATE %q: %s", code, err)
		}
	}
}

func containsHint(s string) bool {
	return strings.Contains(s, "Runlimit's schema is missing: apply it first")
}
