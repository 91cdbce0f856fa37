// Package pgtest gives every PostgreSQL test in this repository a fresh,
// disposable database on one shared server.
//
// # Finding a server
//
// The first test that asks finds a server once for the whole test binary, in
// this order:
//
//  1. the URL in RUNLIMIT_POSTGRES_TEST_DATABASE_URL, if set (a role that
//     may CREATE DATABASE; the URL's own database is used only to create and
//     drop others);
//  2. a disposable PostgreSQL container started with dockertest, when a
//     Docker engine answers a ping;
//  3. the local server at postgres://postgres@127.0.0.1:5432/postgres, if it
//     answers.
//
// When none is available the test fails, saying how to provide one: a
// database test never skips silently.
//
// # One database per test
//
// [New] clones a migrated template database (built once per schema version
// and reused across runs), so a test gets its own migrated database in a few
// tens of milliseconds. [NewEmpty] gives an un-migrated one for migration
// tests. Each database comes with a small pool and is dropped in t.Cleanup,
// after its pools are closed, with a context of its own.
//
// # Roles
//
// [Database.NewRole] makes a login role of the test's own (roles belong to
// the whole server) and removes it, with what it owns, when the test ends.
// [Database.NewServiceRole] holds exactly the privileges the postgres
// package documents for a service, and [Database.PlantShadowSchema] plays a
// role that may only create schemas and plants look-alikes of Runlimit's
// objects first on a victim's search_path.
//
// A package that uses pgtest should call [Main] from TestMain so that a
// container started for it is removed when its tests end.
package pgtest
