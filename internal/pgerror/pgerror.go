// Package pgerror turns the errors of pgx and PostgreSQL into values that
// are safe to print, log and marshal.
//
// Driver errors carry more than their text: a [pgconn.PgError] holds the
// server's detail, hint, context and internal query (a unique violation's
// detail spells the key's bytes in hex), a [pgconn.ConnectError] holds the
// whole connection config, password included, and a
// [pgconn.ParseConfigError] the connection string as written. fmt's %+v,
// encoding/json and spew reach all of it. [Sanitize] keeps what an operator
// needs (the SQLSTATE, severity, constraint, a message, whether it was a
// timeout and whether it is safe to retry) in an [*Error] and drops
// everything else, the original error included.
package pgerror

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATE codes of the server's timeouts.
const (
	codeQueryCanceled     = "57014" // statement_timeout, or a cancel request
	codeLockNotAvailable  = "55P03" // lock_timeout
	codeIdleInTransaction = "25P03" // idle_in_transaction_session_timeout
)

// Error is a driver or server error with every field that could hold a
// secret, a password or key bytes removed.
type Error struct {
	// Code is the SQLSTATE the server reported, such as "23505"; "" when the
	// error did not come from the server (a network or driver failure).
	Code string
	// Severity is the server's severity, such as "ERROR" or "FATAL"; "" when
	// the error did not come from the server.
	Severity string
	// ConstraintName names the constraint a server error is about, if any.
	ConstraintName string
	// Message says what went wrong: the server's primary message, never its
	// detail, hint or context, or else the driver's error text. Runs of hex
	// digits and unprintable characters are masked, as they could spell key
	// bytes, and so is a startup parameter a connection failure quotes,
	// which could spell part of a password (see withholdParameters).
	Message string
	// Timeout reports a client-side deadline or a server statement, lock or
	// idle-in-transaction timeout (SQLSTATE 57014, which a cancel request
	// also raises, 55P03 or 25P03).
	Timeout bool

	text        string // what Error returns: the driver's text, masked as Message is
	safeToRetry bool
	cause       error // context.DeadlineExceeded or context.Canceled, or nil
}

func (e *Error) Error() string { return e.text }

// Unwrap returns context.DeadlineExceeded or context.Canceled when the
// failure was the context's, so that errors.Is finds them; nil otherwise.
func (e *Error) Unwrap() error { return e.cause }

// SQLState returns Code, as [pgconn.PgError.SQLState] does.
func (e *Error) SQLState() string { return e.Code }

// ServerTimeout reports whether the server ended the statement by its
// statement or lock timeout (SQLSTATE 57014, which a cancel request also
// raises, or 55P03): the timeouts a caller's deadline sets.
func (e *Error) ServerTimeout() bool {
	return e.Code == codeQueryCanceled || e.Code == codeLockNotAvailable
}

// ByDeadline returns a copy of e that matches context.DeadlineExceeded:
// for a server timeout that a caller's deadline set, so that the caller
// finds its deadline in the error as it would had the client ended the
// wait.
func (e *Error) ByDeadline() *Error {
	c := *e
	c.cause, c.Timeout = context.DeadlineExceeded, true
	return &c
}

// SafeToRetry reports whether the failure provably happened before anything
// was sent to the server, as [pgconn.SafeToRetry] does for the original.
func (e *Error) SafeToRetry() bool { return e.safeToRetry }

// Messages of errors whose text cannot be trusted.
const (
	msgParseConfig = "cannot parse the connection string (its text is withheld)"
)

// Sanitize returns err as an [*Error], or err itself when it is nil, already
// an *Error, or exactly context.Canceled or context.DeadlineExceeded. The
// result never holds err.
func Sanitize(err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*Error); ok {
		return e
	}
	if err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	e := &Error{safeToRetry: pgconn.SafeToRetry(err)}
	var pgErr *pgconn.PgError
	var parseErr *pgconn.ParseConfigError
	if errors.As(err, &parseErr) {
		e.Message, e.text = msgParseConfig, msgParseConfig
	} else {
		// The driver's own text: a connection error names the user,
		// database and address, never the password, and a server error
		// prints only its severity, primary message and code.
		e.text = clean(err.Error())
		e.Message = e.text
	}
	if errors.As(err, &pgErr) {
		e.Code, e.Severity, e.ConstraintName = pgErr.Code, pgErr.Severity, clean(pgErr.ConstraintName)
		if parseErr == nil {
			e.Message = clean(pgErr.Message)
		}
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		e.text, e.Message = withholdParameters(e.text), withholdParameters(e.Message)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		e.cause = context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		e.cause = context.Canceled
	}
	e.Timeout = e.cause == context.DeadlineExceeded || pgconn.Timeout(err)
	switch e.Code {
	case codeQueryCanceled, codeLockNotAvailable, codeIdleInTransaction:
		e.Timeout = true
	}
	return e
}

// startupParameter matches the server's quoting of a startup parameter
// in a connection failure, its name and any value after it, to the last
// quote of the line: unrecognized configuration parameter "NAME", invalid
// value for parameter "NAME": "VALUE". The server adds no escapes, so a
// name holding a quote ends at the line's last one.
var startupParameter = regexp.MustCompile(`parameter ".*"`)

// startupOptions matches the server's quoting of the options startup
// parameter it cannot read, up to the SQLSTATE pgx appends.
var startupOptions = regexp.MustCompile(`(?m)(for server process: ).*?( \(SQLSTATE \w{5}\)|$)`)

// poolerParameter matches a connection pooler's refusal of a startup
// parameter, which names it unquoted, up to the SQLSTATE pgx appends:
// PgBouncer's "unsupported startup parameter: NAME" and "unsupported
// startup parameter in options: NAME".
var poolerParameter = regexp.MustCompile(`(?m)(unsupported startup parameter[^:\n]*: ).*?( \(SQLSTATE \w{5}\)|$)`)

// withheld stands for what withholdParameters masks.
const withheld = "(withheld: it came from the connection string, and may hold part of a password)"

// withholdParameters masks the startup parameters the server quotes in a
// connection failure, and those a connection pooler in front of it names. Every one came from the connection string, where a
// password can end up in one: written unencoded with a "&" (a URL's
// query) or unquoted with a space (keyword/value), a password ends early
// and leaves its tail to be read as one more parameter, named or valued
// by the rest of the password; and in keyword/value form a setting left
// empty, such as "options= password=...", takes the next pair, password
// and all, as its value. The server's FATAL error would spell it.
func withholdParameters(s string) string {
	s = startupParameter.ReplaceAllLiteralString(s, "parameter "+withheld)
	s = poolerParameter.ReplaceAllString(s, "${1}"+withheld+"${2}")
	return startupOptions.ReplaceAllString(s, "${1}"+withheld+"${2}")
}

// hexRun matches what could be key bytes spelled in hex: a bytea literal or
// eight or more hex digits in a row.
var hexRun = regexp.MustCompile(`\\x[0-9A-Fa-f]*|[0-9A-Fa-f]{8,}`)

// clean masks hex runs and unprintable characters in s.
func clean(s string) string {
	s = hexRun.ReplaceAllString(s, "[hex]")
	if strings.IndexFunc(s, notPrintable) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if notPrintable(r) {
			return '?'
		}
		return r
	}, s)
}

func notPrintable(r rune) bool {
	return r > unicode.MaxASCII || !unicode.IsPrint(r) && r != '\n' && r != '\t'
}
