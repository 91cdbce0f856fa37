package wiring

import (
	"encoding/json"
	"fmt"
)

// MigrateError reports that [Runtime.Start] could not apply Runlimit's
// schema (Config.Migrate): the migrator could not connect, the role may
// not create the schema's objects, the schema belongs to an untrusted
// role, or the start's context ended while the migrator waited, for a
// lock another session holds above all (tern's migration lock, shared
// with every tern migrator of the database). The Runtime is closed.
// Its text never holds the password.
type MigrateError struct {
	Schema string // the schema migrated, Config.Postgres.Schema
	Err    error  // the migrations package's error
}

// Error names the schema and gives the migrator's error.
func (e *MigrateError) Error() string {
	return fmt.Sprintf("runlimit: migrate schema %q: %v", e.Schema, e.Err)
}

// Format prints [MigrateError.Error] under every verb. A verb that does not
// fit the struct, such as %d, would otherwise make fmt print Err's fields.
func (e *MigrateError) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(e.Error())) }

// MarshalJSON encodes the schema and the error's text, never Err's fields:
// a driver's error can carry a connection string.
func (e MigrateError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Schema string `json:"schema"`
		Error  string `json:"error"`
	}{e.Schema, e.Error()})
}

// Unwrap returns the migrator's error: errors.Is finds its context's error
// when the start ran out of time, and [migrations.ErrUntrustedSchema].
func (e *MigrateError) Unwrap() error { return e.Err }
