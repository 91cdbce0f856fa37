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
// A package that uses pgtest calls [Main] from TestMain. When no server can
// be found, its database tests are skipped and counted, and Main fails the
// package with one line saying how many did not run and how to provide a
// server: a database test never passes silently without one. Under go test
// -short (make test-short) the database tests are skipped and the package
// passes. Main also says, in go test -v output, which server the tests
// used, and [Probe] says it before a run (make test runs it first, through
// internal/pgtest/pgprobe, and stops with one line when there is none).
//
// # One database per test
//
// [New] clones a migrated template database (built once per schema version
// and reused across runs), so a test gets its own migrated database in a few
// tens of milliseconds. [NewEmpty] gives an un-migrated one for migration
// tests. Each database comes with a small pool and is dropped in t.Cleanup,
// after its pools are closed, with a context of its own.
//
// Main also removes a container started for the package's tests.
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
// # What stays on the server
//
// The migrated template, runlimit_tpl_ followed by 16 hex digits of a hash
// of the migrations, stays between runs so that the next run clones it at
// once; a new schema version gets a new one and the old one stays too. A
// run killed before its cleanups can also leave runlimit_test_ databases.
// The README shows the SQL that drops both.
package pgtest
