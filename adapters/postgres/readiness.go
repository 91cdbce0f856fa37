package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/runlimit/runlimit/migrations"
	"github.com/runlimit/runlimit/ports"
)

var _ ports.ReadinessChecker = (*Store)(nil)

// ErrSchemaVersion is matched by every [SchemaError].
var ErrSchemaVersion = ownError("runlimit: postgres schema is not the version this build needs")

// SchemaError reports a schema the store cannot admit from, found by
// [Store.Ready]: the migrations recorded an older version than this build's
// statements need, or a Rust Runlimit service migrated it and the
// migrations have not adopted it yet (it lacks the lock function). Run the
// migrations (see [github.com/runlimit/runlimit/migrations]) or
// `runlimit migrate`. It unwraps to [ErrSchemaVersion].
type SchemaError struct {
	Version int32 // the version the migrations recorded; 0 when none
	Want    int32 // the version this build needs: its latest migration's
	Rust    bool  // a Rust Runlimit service migrated the schema, not yet adopted
}

func (e *SchemaError) Error() string {
	if e.Rust {
		return fmt.Sprintf("runlimit: postgres schema was migrated by a Rust Runlimit service and not yet adopted; run the migrations to bring it to version %d", e.Want)
	}
	return fmt.Sprintf("runlimit: postgres schema is at version %d, this build needs %d; run the migrations", e.Version, e.Want)
}

// Unwrap returns [ErrSchemaVersion].
func (e *SchemaError) Unwrap() error { return ErrSchemaVersion }

// requiredVersion is the version of the latest migration, which the store's
// statements are written for.
var requiredVersion = sync.OnceValues(func() (int32, error) {
	steps, err := migrations.SQL("")
	if err != nil {
		return 0, err
	}
	return steps[len(steps)-1].Version, nil
})

// ErrUntrustedSchema is matched by the error of [Store.Ready] when the
// schema holds a table, view or function under one of Runlimit's names
// that belongs neither to the schema's owner nor to a role the store's
// role trusts. It is [migrations.ErrUntrustedSchema].
var ErrUntrustedSchema = migrations.ErrUntrustedSchema

// Ready reports whether the store can serve admissions now, for a readiness
// probe ([ports.ReadinessChecker]). On one pooled connection, in a
// read-only transaction whose statement and lock timeouts are the store's
// own, it first refuses a session whose settings the store cannot serve
// ([*SettingError]: session_replication_role other than origin, a
// search_path that searches another schema before pg_catalog), then a
// schema holding an object under Runlimit's names that another role
// planted ([ErrUntrustedSchema], see [migrations.CheckOwners]; one catalog
// query), then checks the schema's recorded version (at least the latest
// migration's; a schema vendored into the host's migrations records none
// and is judged by what follows), refuses ([ErrSchemaVersion]) a schema
// whose SECURITY DEFINER trigger functions PUBLIC may execute (one
// vendored without migration step 7, or whose privilege was granted
// back), and reads the capacity ledger. Then it
// makes the connection ready exactly as an admission does: it prepares
// every statement and runs the locks and reads in a
// transaction it rolls back, on a connection that admissions have already
// warmed too (its statements taken back first), so that a table dropped or
// a privilege revoked since is found. Stats alone can succeed where every
// admission fails.
//
// It consumes no quota and removes nothing. It waits at most
// AcquireTimeout for a connection and OperationTimeout for the work, or
// less if ctx ends sooner. An error is a [*MaintenanceError] with Op
// "ready", wrapping a [*SchemaError] when the schema is not the version
// this build needs, or a [*SettingError]; its text holds no password. A
// nil ctx is [ports.ErrNilContext]; a closed, nil or zero store
// [ErrClosed].
func (s *Store) Ready(ctx context.Context) error {
	switch {
	case ctx == nil:
		return &MaintenanceError{Op: opReady, Err: ports.ErrNilContext}
	case s.unusable():
		return &MaintenanceError{Op: opReady, Err: ErrClosed}
	}
	want, err := requiredVersion()
	if err != nil {
		return &MaintenanceError{Op: opReady, Err: err}
	}
	return s.maintain(ctx, opReady, func(ss *session) error {
		// The checks read in a transaction of their own, bounded by the
		// store's timeouts rather than the role's or the database's.
		unsafe, err := s.bound(ss)
		if err != nil {
			return interpretMaintenanceError(opReady, stageOpen, err)
		}
		if unsafe != nil {
			return &MaintenanceError{Op: opReady, Err: unsafe}
		}
		if err := s.checkOwners(ss); err != nil {
			return err
		}
		if err := s.checkVersion(ss, want); err != nil {
			return err
		}
		if err := s.checkTriggerFunctions(ss); err != nil {
			return err
		}
		var ledger [ShardCount]int64
		if err := s.readLedger(ss, &ledger); err != nil {
			return interpretMaintenanceError(opReady, stageOpen, err)
		}
		if err := s.unbind(ss); err != nil {
			return interpretMaintenanceError(opReady, stageOpen, err)
		}
		if err := s.cool(ss); err != nil {
			return err
		}
		return s.readyFor(opReady, ss, ctx)
	})
}

// cool takes back the statements a warm connection prepared, so that
// readyFor warms it again as a cold one. What a connection proved when it
// warmed may no longer hold: a table dropped, a function replaced or a
// privilege revoked since fails every admission on it (a prepared
// statement is planned again, and fails, once its objects change), while
// the checks before the warm-up, which never read the counters' table or
// prepare a call of the lock function, still pass. A warm-up that then fails leaves the
// connection cold, as a cold one's does.
func (s *Store) cool(ss *session) error {
	if s.stateOf(ss.pc) == nil {
		return nil
	}
	if !s.unprepare(ss.ctx, ss.pc, stmtCount) {
		ss.setLost()
		return interpretMaintenanceError(opReady, stageOpen, errIncomplete)
	}
	delete(ss.pc.CustomData(), s.sql.stateKey)
	return nil
}

// readyFor makes the session's connection ready for admissions, as an
// admission does, for maintenance operation op (Ready): a connection the
// store has not used before is warmed, and its settings checked. Its error
// is a [*MaintenanceError].
func (s *Store) readyFor(op string, ss *session, caller context.Context) error {
	st, err := s.ready(ss, caller)
	if err != nil {
		// The warm-up's error, as an admission would have met it.
		var ae *AdmissionError
		if errors.As(err, &ae) {
			return &MaintenanceError{Op: op, Timeout: ae.Timeout, Err: ae.Err}
		}
		return interpretMaintenanceError(op, stageOpen, err)
	}
	if st == nil {
		return errCallerLeft
	}
	return nil
}

// bound starts a read-only transaction on the session's connection whose
// statements and lock waits end by the caller's deadline (or the budget),
// whatever statement_timeout and lock_timeout the role or the database
// set, in one round trip. It returns the session's unsafe settings (see
// checkSettings) as a *SettingError, which only Ready reports: stats read
// correctly under them. The session's finish rolls the transaction back,
// or unbind.
func (s *Store) bound(ss *session) (unsafe, err error) {
	var timeouts params
	ss.addTimeouts(&timeouts)
	ss.addLockTimeout(&timeouts)
	t := timeouts.slice()
	var q pgx.Batch
	q.Queue(sqlBeginReadOnly)
	q.Queue(sqlSettings, string(t[0]), string(t[2]), string(t[1])).QueryRow(func(row pgx.Row) error {
		var ignored [3]string
		var replication string
		var searchPath string
		if err := row.Scan(&ignored[0], &ignored[1], &ignored[2], &replication, &searchPath); err != nil {
			return err
		}
		unsafe = checkSettings(replication, searchPath)
		return nil
	})
	if !ss.send(false) {
		return nil, errCallerLeft
	}
	defer ss.received()
	if err := ss.conn.SendBatch(ss.ctx, &q).Close(); err != nil {
		return nil, err
	}
	return unsafe, nil
}

// unbind ends the transaction bound started.
func (s *Store) unbind(ss *session) error {
	if !ss.send(false) {
		return errCallerLeft
	}
	defer ss.received()
	_, err := ss.conn.Exec(ss.ctx, sqlRollback)
	return err
}

// checkOwners returns a [*MaintenanceError] matching [ErrUntrustedSchema]
// when the schema holds an object under Runlimit's names that another role
// planted ([migrations.CheckOwners]), before anything in the schema is read.
func (s *Store) checkOwners(ss *session) error {
	if !ss.send(false) {
		return errCallerLeft
	}
	defer ss.received()
	if err := migrations.CheckOwners(ss.ctx, ss.conn, s.cfg.Schema); err != nil {
		// Its errors are sanitized already, and name the object.
		return &MaintenanceError{Op: opReady, Timeout: isTimeout(err), Err: err}
	}
	return nil
}

// checkTriggerFunctions returns a [*MaintenanceError] matching
// [ErrSchemaVersion] when PUBLIC may execute one of the schema's SECURITY
// DEFINER trigger functions: a schema vendored into a host's migrations
// without step 7, or one whose privilege was granted back. Any role that
// reaches the schema could attach such a function to a table of its own
// and set the capacity ledger's counts with its owner's rights.
func (s *Store) checkTriggerFunctions(ss *session) error {
	if !ss.send(false) {
		return errCallerLeft
	}
	defer ss.received()
	var name *string
	if err := ss.conn.QueryRow(ss.ctx, sqlPublicTriggerFunction, s.cfg.Schema).Scan(&name); err != nil {
		return interpretMaintenanceError(opReady, stageOpen, err)
	}
	if name != nil {
		return &MaintenanceError{Op: opReady, Err: fmt.Errorf("%w: PUBLIC may execute trigger function %s in schema %s, so any role could attach it to a table of its own and set the capacity ledger's counts; apply migration step 7, which revokes it",
			ErrSchemaVersion, pgx.Identifier{*name}.Sanitize(), pgx.Identifier{s.cfg.Schema}.Sanitize())}
	}
	return nil
}

// checkVersion returns a [*MaintenanceError] wrapping a [*SchemaError] when
// the schema's recorded version is older than want, or when a Rust service
// migrated it and it was not adopted.
func (s *Store) checkVersion(ss *session, want int32) error {
	if !ss.send(false) {
		return errCallerLeft
	}
	defer ss.received()
	var tracked bool
	if err := ss.conn.QueryRow(ss.ctx, sqlTracked, s.sql.versionTable).Scan(&tracked); err != nil {
		return interpretMaintenanceError(opReady, stageOpen, err)
	}
	if !tracked {
		rust, err := migrations.RustMigrated(ss.ctx, ss.conn, s.cfg.Schema)
		switch {
		case err != nil:
			// Its errors are sanitized already, and say what is wrong.
			return &MaintenanceError{Op: opReady, Timeout: isTimeout(err), Err: err}
		case rust:
			return &MaintenanceError{Op: opReady, Err: &SchemaError{Want: want, Rust: true}}
		}
		return nil
	}
	var version *int32
	if err := ss.conn.QueryRow(ss.ctx, s.sql.version).Scan(&version); err != nil {
		return interpretMaintenanceError(opReady, stageOpen, err)
	}
	if version == nil || *version < want {
		e := &SchemaError{Want: want}
		if version != nil {
			e.Version = *version
		}
		return &MaintenanceError{Op: opReady, Err: e}
	}
	return nil
}
