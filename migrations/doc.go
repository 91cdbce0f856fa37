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
//	if err := migrations.MigratePool(ctx, pool); err != nil {
//		return err
//	}
//
// The tables, functions and the version table [VersionTable] are created in
// the connection's current schema (the first schema of its search_path), so
// a host that keeps Runlimit in its own schema sets search_path on the
// connection it migrates with and on the pool the store uses.
//
// # Living beside a host's own migrations
//
// Runlimit records its version in its own table, runlimit_schema_version,
// never in the host's: a host that migrates its own schema with tern (under
// its own version table) can run its migrator and Runlimit's in either
// order, and neither sees the other's history.
//
// Do not call [Migrate] from inside one of the host's tern migrations on a
// different connection. Every tern migrator takes the same session-level
// advisory lock while it runs, so the inner migrator would wait for the
// outer one forever. Run them one after the other instead.
//
// # Vendoring
//
// Hosts that keep a strict, single migration history can copy the SQL into
// their own migrations instead of running this package: [SQL] returns every
// step in order, up and down, exactly as [Migrate] would run it, and [FS]
// exposes the embedded files themselves. Do not run [Migrate] against a
// database whose schema was vendored: its version table would say nothing
// is applied.
//
// [tern]: https://github.com/jackc/tern
package migrations
