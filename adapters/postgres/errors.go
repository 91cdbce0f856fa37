package postgres

import (
	"errors"
	"fmt"
	"strings"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/internal/pgerror"
	"github.com/runlimit/runlimit/ports"
)

// Errors of a PostgreSQL [Store]. Each comes wrapped in a typed error that
// says whether quota may have been consumed ([AdmissionError]) or rows removed
// ([MaintenanceError]).
var (
	// ErrClosed: the store was closed. It is [ports.ErrClosed], the
	// contract every store shares.
	ErrClosed = ports.ErrClosed
	// ErrNilPool: New was given no pool.
	ErrNilPool = ownError("runlimit: postgres store needs a pool")
	// ErrTimeout is matched by an error whose operation ran out of time: a
	// client-side deadline, or a server statement or lock timeout set from
	// the operation's budget.
	ErrTimeout = ownError("runlimit: postgres store operation timed out")
	// ErrNegativeMax: CleanupExpired was asked to remove a negative number
	// of rows. It is [ports.ErrNegativeMax], which matches
	// [domain.ErrInvalidInput].
	ErrNegativeMax = ports.ErrNegativeMax
	// ErrLedger: the capacity ledger does not have a row for every shard,
	// or a row holds a count outside 0 to [MaxRowsPerShard]; the schema is
	// missing or damaged.
	ErrLedger = ownError("runlimit: postgres capacity ledger is incomplete")
	// ErrCommitOutcome: COMMIT answered that the transaction was rolled back.
	ErrCommitOutcome = ownError("runlimit: postgres commit rolled back")
)

// DatabaseError is what the store keeps of an error from PostgreSQL or
// pgx: the SQLSTATE (Code), severity, constraint name, a message, whether it
// was a timeout, and errors.Is access to context.DeadlineExceeded and
// context.Canceled. It never holds the server's detail, hint, context or
// internal query (a unique violation's detail spells key bytes in hex), a
// connection config or a connection string (they hold the password), nor
// the original error. Every driver error of [AdmissionError] and
// [MaintenanceError] is one, and so is every driver error of the
// migrations package.
type DatabaseError = pgerror.Error

// storeError is an error of the store's own making: its text is safe as it
// is.
type storeError struct{ text string }

func (e *storeError) Error() string { return e.text }

func ownError(text string) error { return &storeError{text} }

// Errors of the protocol, never returned on their own.
var (
	// errIncomplete: the server's answer ended early without an error.
	errIncomplete = ownError("runlimit: the server's answer ended early")
	// errCallerLeft: the caller gave up before the work could send its
	// next round trip; the caller already has its answer.
	errCallerLeft = ownError("runlimit: the caller gave up")
)

// ErrUnsafeSetting is matched by every [SettingError].
var ErrUnsafeSetting = ownError("runlimit: postgres session runs under a setting the store cannot serve")

// SettingError reports a server setting of a connection's session under
// which the store cannot keep its counters exact, found when the
// connection is made ready (by an admission or [Store.Ready]): set for the
// service's role or the database (ALTER ROLE ... SET, ALTER DATABASE ...
// SET) or in the connection's startup parameters. The store does not serve
// such a connection; it fails closed, consuming nothing, until the setting
// is removed. It unwraps to [ErrUnsafeSetting]. Setting values are not
// secret: Value is the session's.
type SettingError struct {
	Name  string // the setting, such as "session_replication_role"
	Value string // its value in the session
	Want  string // what the store needs
}

func (e *SettingError) Error() string {
	return fmt.Sprintf("runlimit: postgres session has %s = %q, the store needs %s", e.Name, e.Value, e.Want)
}

// Unwrap returns [ErrUnsafeSetting].
func (e *SettingError) Unwrap() error { return ErrUnsafeSetting }

// malformed reports an answer of the server the store cannot read.
func malformed(what string) error { return ownError("runlimit: " + what) }

// Steps of an admission, as named by [AdmissionError.Op].
const (
	OpAdmit    = "admit"    // before any connection was used: closed store, done context
	OpAcquire  = "acquire"  // waiting for a pooled connection, or making a new one ready
	OpLock     = "lock"     // round trip 1: begin, locks, reads, clock sample
	OpEvaluate = "evaluate" // the domain rejected the stored state
	OpWrite    = "write"    // round trip 2: the server rejected a write, so COMMIT never ran
	OpCommit   = "commit"   // round trip 2: COMMIT failed, or the round trip's outcome is unknown
)

// AdmissionError reports a failed admission. It always fails closed: the request
// must not proceed. MayHaveConsumed says whether the batch may nevertheless
// have been committed: only once COMMIT may have reached the server (a
// commit error, a commit timeout, a connection lost under it). Callers ask
// through [github.com/runlimit/runlimit/ports.MayHaveConsumedQuota].
//
// Neither its text nor any of its fields contains key bytes or a password:
// a driver error is kept as a [*DatabaseError].
type AdmissionError struct {
	Op              string // the step that failed: OpAdmit, OpAcquire, OpLock, OpEvaluate, OpWrite or OpCommit
	MayHaveConsumed bool   // the batch may have been committed
	Timeout         bool   // the step ran out of time; the error matches [ErrTimeout]
	Err             error
}

func (e *AdmissionError) Error() string {
	return fmt.Sprintf("runlimit: postgres admission failed at %s (%s%s): %v%s%s",
		e.Op, consumedText(e.MayHaveConsumed), timeoutText(e.Timeout), e.Err, schemaHint(e.Err), poolerHint(e.Err))
}

// Unwrap returns the cause.
func (e *AdmissionError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrTimeout] and the step timed out, or
// [ErrPooler] and the cause is one a connection pooler makes.
func (e *AdmissionError) Is(target error) bool { return causeIs(target, e.Timeout, e.Err) }

// causeIs is the Is of [AdmissionError] and [MaintenanceError]: timeout
// says whether the operation timed out, err is its cause.
func causeIs(target error, timeout bool, err error) bool {
	switch target {
	case ErrTimeout:
		return timeout
	case ErrPooler:
		return poolerHint(err) != ""
	}
	return false
}

// MayHaveConsumedQuota reports e.MayHaveConsumed.
func (e *AdmissionError) MayHaveConsumedQuota() bool { return e.MayHaveConsumed }

// SafeToRetry reports !e.MayHaveConsumed: whether running the admission
// again cannot count it twice. pgconn.SafeToRetry finds this method before
// the driver's own mark on the cause, which says only whether the failed
// round trip left the client: a connection that broke as the answer to a
// COMMIT began is marked safe by the driver, yet that COMMIT may have
// been applied.
func (e *AdmissionError) SafeToRetry() bool { return !e.MayHaveConsumed }

func consumedText(may bool) string {
	if may {
		return "quota may have been consumed"
	}
	return "no quota consumed"
}

// missingSchemaHint is what [AdmissionError] and [MaintenanceError] add to their
// text when the server said that a table, function or schema they use does
// not exist: the schema was never applied, or applied into another schema
// than [Config.Schema] names.
const missingSchemaHint = "; Runlimit's schema is missing: apply it first (migrations.MigratePool, `runlimit migrate`, or app/wiring's Config.Migrate, RUNLIMIT_MIGRATE=true in its environment), or point Config.Schema (RUNLIMIT_POSTGRES_SCHEMA) at the schema that holds it"

// schemaHint returns missingSchemaHint when err is a server error saying that
// an object does not exist, and "" otherwise.
func schemaHint(err error) string {
	var dbErr *DatabaseError
	if errors.As(err, &dbErr) {
		switch dbErr.Code {
		case "42P01", "42883", "3F000": // undefined_table, undefined_function, invalid_schema_name
			return missingSchemaHint
		}
	}
	return ""
}

// ErrPooler is matched by an [AdmissionError] or [MaintenanceError] whose
// cause is most likely a connection pooler between the pool and the server
// that does not serve the store as a direct connection would (see the
// package's Connection poolers section), or host code that reset a
// connection the store uses: a statement prepared on the connection is
// missing (SQLSTATE 26000), a connection the store had not prepared
// already holds a statement under one of the store's names (42P05), or
// the pooler refused a transaction block or a startup parameter. The
// error's text says what to change. The operation consumed and removed
// nothing, unless the statement missing was a transaction's COMMIT: that
// error is read as any error of a COMMIT is, and says that quota may have
// been consumed (or rows removed).
var ErrPooler = ownError("runlimit: postgres connection is pooled in a way the store cannot serve")

// Hints that [AdmissionError] and [MaintenanceError] add to their text when
// their cause matches [ErrPooler].
const (
	statementsHint = "; the connection's server session lacked the store's prepared statements, or held another client's: " +
		"a connection pooler in transaction pooling or statement pooling mode (PgBouncer pool_mode=transaction or statement) " +
		"moves a connection from one server session to another, unless it tracks protocol-level prepared statements itself " +
		"(PgBouncer 1.21 or later with max_prepared_statements > 0), and host code that runs DISCARD ALL or DEALLOCATE " +
		"on a pooled connection drops them: use session pooling (pool_mode=session) or a direct connection, " +
		"and keep host code from resetting the connections the store uses"
	poolingModeHint = "; a connection pooler refused the store's transactions: statement pooling (PgBouncer pool_mode=statement) " +
		"forbids transactions of more than one statement, which the store needs: use session pooling (pool_mode=session) or a direct connection"
	startupParameterHint = "; a connection pooler refused a startup parameter of the pool's connections (PgBouncer accepts only those it tracks): " +
		"list it in PgBouncer's ignore_startup_parameters, or remove it from the connection string or the pool's RuntimeParams " +
		"(the pool the app wiring opens from a URL pins search_path this way; " +
		"ignoring that one is safe: the store checks each session's search_path itself)"
)

// poolerHint returns the hint for an error matching [ErrPooler], and ""
// for any other: the one rule that says which errors match it.
func poolerHint(err error) string {
	var dbErr *DatabaseError
	if !errors.As(err, &dbErr) {
		return ""
	}
	switch {
	case dbErr.Code == sqlstateNoSuchStatement, dbErr.Code == sqlstateDuplicateStatement:
		return statementsHint
	case dbErr.Code != sqlstateProtocolViolation:
		return ""
	// PgBouncer's own errors, sent as FATAL protocol violations before it
	// closes the connection.
	case strings.Contains(dbErr.Message, "pooling mode"):
		// "transaction blocks not allowed in statement pooling mode"
		return poolingModeHint
	case strings.Contains(dbErr.Message, "unsupported startup parameter"):
		return startupParameterHint
	}
	return ""
}

func timeoutText(timeout bool) string {
	if timeout {
		return ", timed out"
	}
	return ""
}

// MaintenanceError reports a failed cleanup, stats read or readiness
// check ([Store.Ready]). MayHaveRemoved
// says whether a cleanup may nevertheless have committed its deletions. Like
// [AdmissionError], it holds no key bytes and no password.
type MaintenanceError struct {
	Op             string // "cleanup", "stats" or "ready"
	MayHaveRemoved bool   // a cleanup may have removed rows
	Timeout        bool   // the operation ran out of time; the error matches [ErrTimeout]
	Err            error
}

func (e *MaintenanceError) Error() string {
	removed := "no rows removed"
	if e.MayHaveRemoved {
		removed = "rows may have been removed"
	}
	if e.Op != opCleanup {
		removed = "nothing changed"
	}
	return fmt.Sprintf("runlimit: postgres %s failed (%s%s): %v%s%s", e.Op, removed, timeoutText(e.Timeout), e.Err, schemaHint(e.Err), poolerHint(e.Err))
}

// Unwrap returns the cause.
func (e *MaintenanceError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrTimeout] and the operation timed out,
// or [ErrPooler] and the cause is one a connection pooler makes.
func (e *MaintenanceError) Is(target error) bool { return causeIs(target, e.Timeout, e.Err) }

// MayHaveRemovedRows reports e.MayHaveRemoved.
func (e *MaintenanceError) MayHaveRemovedRows() bool { return e.MayHaveRemoved }

// SafeToRetry reports !e.MayHaveRemoved, as [AdmissionError.SafeToRetry]
// does for quota: pgconn.SafeToRetry finds it before the driver's mark on
// the cause.
func (e *MaintenanceError) SafeToRetry() bool { return !e.MayHaveRemoved }

// MayHaveConsumedQuota returns false: maintenance never consumes quota.
func (e *MaintenanceError) MayHaveConsumedQuota() bool { return false }

const (
	opCleanup = "cleanup"
	opStats   = "stats"
	opReady   = "ready"
)

// ShardOverflowError reports a batch that puts more distinct keys on one
// capacity shard than [Config.RowsPerShard], so it could never be allowed.
// It is a structural error found before any connection is used: it unwraps
// to [domain.ErrInvalidBatch] and matches [domain.ErrInvalidInput].
type ShardOverflowError struct {
	Shard    int // the shard, 0 to 255
	Count    int // distinct keys of the batch on that shard
	Capacity int // the configured rows per shard
}

func (e *ShardOverflowError) Error() string {
	return fmt.Sprintf("runlimit: invalid batch: %d checks fall on postgres capacity shard %d, which holds at most %d rows",
		e.Count, e.Shard, e.Capacity)
}

// Unwrap returns [domain.ErrInvalidBatch].
func (e *ShardOverflowError) Unwrap() error { return domain.ErrInvalidBatch }

// Is reports whether target is [domain.ErrInvalidInput].
func (e *ShardOverflowError) Is(target error) bool { return target == domain.ErrInvalidInput }

// MayHaveConsumedQuota returns false: the batch never reached the database.
func (e *ShardOverflowError) MayHaveConsumedQuota() bool { return false }
