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
// ([ErrUntrustedSchema]): the owner of a schema can drop anything in it. It
// also refuses a schema holding a table, view or function under Runlimit's
// names (runlimit_*, _sqlx_migrations) that such a role owns, before
// reading anything there: a role with CREATE on the schema could otherwise
// plant a version table whose trigger runs with the migrating role's
// rights. Likewise a trigger on one of Runlimit's tables whose function
// such a role owns, or a foreign key into one from such a role's table (a
// role holding TRIGGER or REFERENCES there could otherwise run its code as
// whoever writes the table, or pin counters against deletion), and a
// trigger that attaches Runlimit's own trigger functions (PUBLIC may
// execute them before step 7) on an event Runlimit's triggers do not (the capacity ledger
// would miscount). [CheckTrusted] runs the same check for tools that read the schema
// first. [CheckOwners] is the check of a role that uses a schema another
// role owns (a service's role, or the runlimit status and cleanup commands
// run as it): it trusts the schema's owner and refuses objects under
// Runlimit's names that any other untrusted role owns; postgres.Store's
// Ready runs it.
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
// # Sharing a database with Rust services
//
// From version 5 on, the schema is Runlimit's own, name for name: the
// tables, columns, the generated capacity_shard column, every constraint,
// the expiry index and the SQLSTATEs its triggers raise are those a Rust
// Runlimit service creates, and keys and advisory lock ids are the same
// bytes, so services in both languages can share one schema and one quota.
// Their migration histories are not shared: a Rust service records its
// steps in sqlx's _sqlx_migrations, with checksums of its own SQL that this
// package cannot produce, and this package records its version in
// [VersionTable]. A mixed deployment therefore migrates in this order:
//
//  1. Let a Rust service (or its migrator) create the schema first, with
//     the schema as the first entry of its search_path. Its
//     _sqlx_migrations then records versions 20260723000000,
//     20260725000000 and 20260726000000 ([RustVersions]).
//  2. Then run [Migrate] (or runlimit migrate) on that schema. It
//     recognises the three rows ([RustMigrated]) and adopts the schema: it
//     creates [VersionTable] at [RustSchemaVersion], re-creating nothing and
//     leaving _sqlx_migrations alone, and adds only this library's own
//     objects (the lock function runlimit_lock_counter and the truncate
//     trigger), whose names no Rust migration uses. The Rust migrator stays
//     content: every row it wrote is still there, and nothing it created
//     changed.
//
// A schema created by this package first has no _sqlx_migrations rows, and
// a Rust migrator would try to create the tables again and fail. Run such
// Rust services with their migrations disabled (the schema is already the
// one they expect), or start the schema from step 1. A _sqlx_migrations
// holding some of Runlimit's rows but not all is a Rust migration that did
// not finish: Migrate refuses it ([ErrRustIncomplete]). Rust migrations
// after these three are not recognised; check a later Rust release against
// this package before sharing its schema.
//
// # Upgrading to versions 6 and 7
//
// Step 5 renames columns, constraints and the index, and replaces the
// triggers, under an exclusive lock on both tables, keeping every row and
// every count. Replicas of the previous release keep admitting single
// checks while the new release rolls out (the lock function keeps their
// signature); their batches, stats and newly opened connections fail
// closed, without consuming quota, until they are replaced. Replicas of
// earlier releases, which call the five-argument lock function step 5
// drops, must be stopped before migrating. Step 5 is one-way: its down step
// refuses (feature_not_supported), so take a backup before it if you may
// need version 4 again. Step 6's down step returns to version 5, dropping
// only this library's own objects.
//
// Step 7 takes EXECUTE on the schema's trigger functions (runlimit_*, a
// Rust schema's included) from PUBLIC. They run as their owner, and the
// privilege is checked when a trigger is created, not when it fires: any
// role that reached the schema could attach them to a table of its own (a
// temporary one needs no privilege) and set the capacity ledger's counts
// at will. It changes nothing else, so replicas of the previous release
// serve on version 7, and this release's on version 6 until it is
// migrated (its Ready then asks for version 7). Its down step grants the
// privilege back.
//
// # Errors
//
// No error of this package holds a password, a connection config or the
// server's detail fields: driver errors arrive as
// [github.com/runlimit/runlimit/adapters/postgres.DatabaseError] values.
//
// [tern]: https://github.com/jackc/tern
package migrations
