// Package migrations holds the SQL schema of Runlimit's PostgreSQL store and
// a small API to apply it with [tern].
//
// # Applying the schema
//
// Run [Migrate] (or [MigratePool]) once at startup, before any replica
// serves traffic. It is safe to run from every replica at once and to run
// again: tern serialises migrators with an advisory lock and skips the
// versions already applied.
//
//	if err := migrations.MigratePool(ctx, pool, "runlimit"); err != nil {
//		return err
//	}
//
// # One schema, named in full
//
// Every table and function, and the version table [VersionTable], is
// created in one schema, [DefaultSchema] ("public") unless another is named
// ([CheckSchema] says which names are accepted). The store must be told the
// same schema (postgres.Config.Schema). Every statement names its objects in
// full, and every function runs with search_path pinned to pg_catalog and
// pg_temp, so no schema that a session searches first can stand in for
// Runlimit's objects. Migrate itself runs on a connection of its own whose
// search_path is pinned the same way, creates the schema when it is
// missing, and refuses one that belongs to a role it cannot vouch for
// ([ErrUntrustedSchema]): the owner of a schema can drop anything in it.
//
// Databases migrated before the schema was configurable hold Runlimit's
// objects in the schema that was first on the migrating connection's
// search_path, public by default; name that schema.
//
// # Living beside a host's own migrations
//
// Runlimit records its version in its own table, runlimit_schema_version,
// never in the host's: a host that migrates its own schema with tern (under
// its own version table) can run its migrator and Runlimit's in either
// order, and neither sees the other's history.
//
// Do not call [Migrate] from inside one of the host's tern migrations. It
// runs on a connection of its own, and every tern migrator takes the same
// session-level advisory lock while it runs, so the inner migrator would
// wait for the outer one forever. Run them one after the other instead.
//
// # Vendoring
//
// Hosts that keep a strict, single migration history can copy the SQL into
// their own migrations instead of running this package: [SQL] returns every
// step in order, up and down, rendered for a schema exactly as [Migrate]
// would run it, and [FS] exposes the embedded templates themselves. The
// steps do not create the schema. Do not run [Migrate] against a database
// whose schema was vendored: its version table would say nothing is
// applied.
//
// # Errors
//
// No error of this package holds a password, a connection config or the
// server's detail fields: driver errors arrive as
// [github.com/runlimit/runlimit/adapters/postgres.DatabaseError] values.
//
// [tern]: https://github.com/jackc/tern
package migrations
