package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/internal/connstring"
	"github.com/runlimit/runlimit/internal/pgerror"
	"github.com/runlimit/runlimit/migrations"
)

// envDatabaseURL names the environment variable that gives the database
// commands their URL when --database-url is absent.
const envDatabaseURL = "RUNLIMIT_DATABASE_URL"

// connectTimeout bounds opening the database: the first connection and its
// first round trip.
const connectTimeout = 10 * time.Second

// databaseFlagName is the flag every database command shares.
const databaseFlagName = "database-url"

// errNoDatabaseURL: a database command was given no URL. It says how to give
// one.
var errNoDatabaseURL = fmt.Errorf("%w: no database: pass --%s postgres://user@host:5432/dbname or set %s",
	errUsage, databaseFlagName, envDatabaseURL)

// addDatabaseFlag registers --database-url on fs. Its default is empty, so
// that --help never prints a URL taken from the environment.
func addDatabaseFlag(fs *flag.FlagSet, fromEnv bool) *string {
	help := "PostgreSQL URL, such as postgres://user@host:5432/dbname"
	if fromEnv {
		help += " (default $" + envDatabaseURL + ")"
	}
	return fs.String(databaseFlagName, "", help)
}

// databaseURL returns the URL a command was given: the flag's value when the
// flag is present, otherwise the environment's. fs must have been parsed.
func databaseURL(fs *flag.FlagSet, getenv func(string) string) (string, error) {
	f := fs.Lookup(databaseFlagName)
	if isSet(fs, databaseFlagName) {
		if f.Value.String() == "" {
			return "", fmt.Errorf("%w: --%s is empty", errUsage, databaseFlagName)
		}
		return f.Value.String(), nil
	}
	if u := getenv(envDatabaseURL); u != "" {
		return u, nil
	}
	return "", errNoDatabaseURL
}

// envSchema is the variable app/wiring reads the service's schema from
// (wiring.EnvPostgresSchema), so that a command sharing the service's
// environment (a migration or cleanup job) works on the service's schema.
const envSchema = "RUNLIMIT_POSTGRES_SCHEMA"

// schemaOf returns the schema a database command works on: --schema when
// given, else $RUNLIMIT_POSTGRES_SCHEMA when set, else the flag's default.
// A value Runlimit cannot use is a usage error naming where it came from.
func schemaOf(fs *flag.FlagSet, flagValue string, getenv func(string) string) (string, error) {
	if !isSet(fs, schemaFlagName) {
		if v := getenv(envSchema); v != "" {
			if err := migrations.CheckSchema(v); err != nil {
				return "", fmt.Errorf("%w: $%s: %v", errUsage, envSchema, err)
			}
			return v, nil
		}
	}
	return flagValue, checkSchema(flagValue)
}

// schemaFlagName is the flag naming the schema of Runlimit's objects.
const schemaFlagName = "schema"

// addSchemaFlag registers --schema on fs.
func addSchemaFlag(fs *flag.FlagSet) *string {
	return fs.String(schemaFlagName, migrations.DefaultSchema,
		"the schema holding Runlimit's tables and functions: 1 to 63 ASCII letters, digits and underscores, used as written")
}

// checkSchema reports a --schema value Runlimit cannot use as a usage
// error.
func checkSchema(schema string) error {
	if err := migrations.CheckSchema(schema); err != nil {
		return fmt.Errorf("%w: --%s: %v", errUsage, schemaFlagName, err)
	}
	return nil
}

// connect opens the database a parsed command line names, by its flag or
// the environment.
//
// Its sessions' statements and lock waits end, on the server, a little
// before timeout (the command's --timeout), and an idle transaction after
// it: see sessionTimeouts.
func connect(ctx context.Context, fs *flag.FlagSet, getenv func(string) string, timeout time.Duration) (*database, error) {
	u, err := databaseURL(fs, getenv)
	if err != nil {
		return nil, err
	}
	return openDatabase(ctx, u, timeout)
}

// sessionTimeouts returns the startup parameters that bound the sessions
// of a command whose work must end by timeout, whatever the role or the
// database set (ALTER ROLE ... SET statement_timeout = '1ms' would fail
// every command; a lock_timeout of 0 would let a lock another session
// holds, a LOCK TABLE, a long transaction, another migration's advisory
// lock, keep it waiting for ever): statement_timeout and lock_timeout a
// tenth before timeout, at most 250 ms, so that the server ends a wait
// before the command's deadline does and says why, and
// idle_in_transaction_session_timeout at timeout, so that the server ends
// the session of a command that vanished mid-transaction.
func sessionTimeouts(timeout time.Duration) map[string]string {
	wait := timeout - min(timeout/10, 250*time.Millisecond)
	ms := func(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) + "ms" }
	return map[string]string{
		"statement_timeout":                   ms(wait),
		"lock_timeout":                        ms(wait),
		"idle_in_transaction_session_timeout": ms(timeout),
	}
}

// isSet reports whether the command line set flag name.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// database is a small pool on the command's database, with the secrets of
// its URL, which nothing the command prints may contain.
type database struct {
	pool    *pgxpool.Pool
	secrets redactor
}

// openDatabase parses rawURL, opens a pool of at most two connections and
// checks that the server answers. With a timeout above 0, the sessions'
// work is bounded by it (see sessionTimeouts), unless the URL sets a
// timeout itself. Its errors never contain a password.
func openDatabase(ctx context.Context, rawURL string, timeout time.Duration) (*database, error) {
	secrets := urlSecrets(rawURL)
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// pgx masks the passwords it recognises in a malformed URL, on a
		// best-effort basis, and the redactor masks the ones this command
		// found; the error itself, which holds the URL, is not kept.
		return nil, secrets.wrapText("the database URL is invalid: "+err.Error(), pgerror.Sanitize(err))
	}
	if connstring.SwallowedPassword(&cfg.ConnConfig.Config) {
		// The output would be masked, but the server would be sent the
		// password as a role, database or application name, which its log
		// and pg_stat_activity show.
		return nil, fmt.Errorf(`%w: the database URL has a setting left empty before its password ("user= password=..."), `+
			`which takes the password pair as its value: write an empty value as '' or leave the setting out`, errUsage)
	}
	// The password may also come from PGPASSWORD or a passfile.
	secrets = secrets.with(cfg.ConnConfig.Password)
	cfg.MaxConns = 2
	// Every statement the commands send names its objects in full, but a
	// search_path set for the role or the database that searched another
	// schema before pg_catalog would let that schema's operators stand in
	// for the built-ins, in the ownership checks too, and the store refuses
	// such a session. A startup parameter overrides both settings.
	cfg.ConnConfig.RuntimeParams["search_path"] = "pg_catalog, pg_temp"
	if timeout > 0 {
		for name, value := range sessionTimeouts(timeout) {
			if _, ok := cfg.ConnConfig.RuntimeParams[name]; !ok {
				cfg.ConnConfig.RuntimeParams[name] = value
			}
		}
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "runlimit"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, secrets.wrap(fmt.Errorf("open the database: %w", pgerror.Sanitize(err)))
	}
	pingCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		// Sanitized first: a server refusing the connection quotes the
		// startup parameter it rejects, which can hold part of a password
		// the connection string did not delimit (see urlSecrets).
		return nil, secrets.wrap(fmt.Errorf("connect to the database: %w", pgerror.Sanitize(err)))
	}
	return &database{pool: pool, secrets: secrets}, nil
}

// close closes the pool.
func (d *database) close() { d.pool.Close() }

// wrap returns err with the URL's secrets masked in its text, and a hint
// when the schema is missing.
func (d *database) wrap(err error) error {
	if err == nil {
		return nil
	}
	return d.secrets.wrap(schemaHint(err))
}

// schemaHint adds what to do to an error that means Runlimit's schema,
// tables or functions are missing.
func schemaHint(err error) error {
	var dbErr *postgres.DatabaseError
	if errors.As(err, &dbErr) {
		switch dbErr.Code {
		case "42P01", "42883", "3F000": // undefined_table, undefined_function, invalid_schema_name
			hint := fmt.Sprintf(`; the runlimit schema is missing or out of date: run "runlimit migrate" first, or check --%s`, schemaFlagName)
			// The store's own errors name the library's ways to apply the
			// schema; a command's user needs the command's.
			text, _, _ := strings.Cut(err.Error(), storeSchemaHint)
			return &hintedError{text: text + hint, err: err}
		}
	}
	return err
}

// storeSchemaHint begins the hint the postgres store adds to an error
// saying its schema is missing.
const storeSchemaHint = "; Runlimit's schema is missing: "

// hintedError is err with its text replaced by text.
type hintedError struct {
	text string
	err  error
}

func (e *hintedError) Error() string { return e.text }
func (e *hintedError) Unwrap() error { return e.err }

// mask replaces a secret in printed text.
const mask = "xxxxx"

// redactor is the set of secrets found in a database URL, longest first so
// that a secret containing another is masked whole.
type redactor []string

// kvPassword matches a password setting in a keyword/value connection
// string or a URL's query: password=secret, password = 'se cret'. A
// bare value may be empty: a password that begins with a space or an "&"
// leaves all of itself to the words after it.
//
// Its spaces are pgx's: ASCII whitespace, the vertical tab included, which
// the regular expression's \s leaves out.
var kvPassword = regexp.MustCompile(`password[\t\n\v\f\r ]*=[\t\n\v\f\r ]*('(?:\\.|[^'\\])*'|[^\t\n\v\f\r &]*)`)

// quotedValue matches a keyword/value setting's value in single quotes,
// closed, as kvPassword's first alternative reads it.
var quotedValue = regexp.MustCompile(`^'(?:\\.|[^'\\])*'$`)

// urlSecrets finds every form in which rawURL's password could be printed:
// as written, percent-decoded, and unquoted. It errs on the side of masking
// too much: a malformed URL is searched by hand.
func urlSecrets(rawURL string) redactor {
	var r redactor
	if _, rest, ok := strings.Cut(rawURL, "://"); ok {
		// The user information ends at the last "@": a password may hold
		// "/" or "@" when the URL is malformed.
		var raw string
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				raw = pw
				r = r.with(pw)
			}
		}
		// Parsers disagree on where a password holding "@" ends (Go's at
		// the last "@", pgx's at the first), and one that reads it
		// differently prints a piece of it as the host: mask every piece.
		// When the URL is malformed, "/", ":", "?" and "#" may split it
		// too, and so may "=": an argument such as --postgres://u:pw=@h
		// is a flag to the flag package, whose error names the flag, the
		// argument up to its first "=".
		separators := "@"
		u, err := url.Parse(rawURL)
		if err == nil {
			if pw, ok := u.User.Password(); ok {
				r = r.with(pw)
			}
			for _, pw := range u.Query()["password"] {
				r = r.with(pw)
			}
		} else {
			separators = "@/:?#="
		}
		// pgx parses a URL as libpq does: a "/" ends the search for the
		// user information, so a password holding one is read as a host,
		// a port, a database name and parameters, and a "#" is an
		// ordinary character, where Go's parser reads a fragment and may
		// succeed. Each piece may be printed.
		if strings.Contains(raw, "/") {
			separators = "@/:?#&="
		}
		for _, piece := range strings.FieldsFunc(raw, func(c rune) bool { return strings.ContainsRune(separators, c) }) {
			r = r.with(piece)
		}
		r = r.withQueryPasswords(rest)
	}
	// A value is quoted only in a keyword/value string, and only when its
	// quote is closed and followed by a space or the end: in a URL's query
	// a quote is an ordinary character, the regular expression reads an
	// unclosed one as a bare value that starts with it, and a closed one
	// may be the start of a password that goes on ('' and then 000000).
	// Otherwise the password may go on past the value matched:
	// password='&rest in a query is "'" and a parameter named "rest".
	_, _, isURL := strings.Cut(rawURL, "://")
	for _, m := range kvPassword.FindAllStringSubmatchIndex(rawURL, -1) {
		v := rawURL[m[2]:m[3]]
		ends := m[1] == len(rawURL) || strings.IndexByte("\t\n\v\f\r ", rawURL[m[1]]) >= 0
		bare := isURL || !quotedValue.MatchString(v) || !ends
		r = r.with(v)
		if bare {
			r = r.withTail(rawURL[m[1]:])
		}
		r = r.with(strings.Trim(v, "'")) // an unterminated quote
		// A URL's parser, or pgx masking the password it finds in a URL it
		// cannot parse, may cut a bare value at any of a URL's
		// separators and print a piece: password=%@rest was printed as
		// "...:xxxxx@rest".
		if bare {
			for _, piece := range strings.FieldsFunc(v, func(c rune) bool { return strings.ContainsRune("@/:?#&=", c) }) {
				r = r.with(piece)
			}
		}
		if strings.HasPrefix(v, "'") && strings.HasSuffix(v, "'") && len(v) >= 2 {
			inner := v[1 : len(v)-1]
			r = r.with(inner)
			r = r.with(strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(inner))
		}
	}
	return r
}

// withQueryPasswords returns r with the values of the query parameters
// in rest, the text after a URL's "://", whose names percent-decode to a
// password's: pgx decodes a query parameter's name before it reads it, so
// ?pass%77ord=pw and ?sslpass%77ord=pw set a password, which
// kvPassword, reading the text as written, does not find. Go's parser
// decodes them too, but fails on an argument that holds the URL after a
// flag's name (--json=postgres://...) and on a URL only pgx reads (a host
// list): the query is read here by hand, as pgx reads it, from the first
// "?" to the end, in pairs cut at "&". A name is a password's when,
// decoded (more than once, and in any case), it holds "password": this
// masks a little too much rather than too little. A pair with no "=" whose
// decoded text holds one after "password" (?password%3Dpw, the pair
// encoded whole) sets nothing, but pgx quotes it whole as it rejects it,
// and so it is masked whole. Either way the password may go on past the
// pair, at an "&" it holds, and the pairs after it are masked as a bare
// value's tail is (see withTail).
func (r redactor) withQueryPasswords(rest string) redactor {
	_, query, ok := strings.Cut(rest, "?")
	if !ok {
		return r
	}
	for query != "" {
		pair, after, _ := strings.Cut(query, "&")
		query = after
		key, value, ok := strings.Cut(pair, "=")
		if !ok {
			decoded := strings.ToLower(decodeAll(pair))
			i := strings.Index(decoded, "password")
			if i < 0 || !strings.Contains(decoded[i:], "=") {
				continue
			}
			value = pair
		} else if !strings.Contains(strings.ToLower(decodeAll(key)), "password") {
			continue
		}
		r = r.with(value)
		for _, piece := range strings.FieldsFunc(value, func(c rune) bool { return strings.ContainsRune("@/:?#=", c) }) {
			r = r.with(piece)
		}
		r = r.withTail(after)
	}
	return r
}

// decodeAll percent-decodes s until it stops changing, at most a few
// times, leaving an escape that does not decode as it is.
func decodeAll(s string) string {
	for range 3 {
		d, err := url.PathUnescape(s)
		if err != nil || d == s {
			break
		}
		s = d
	}
	return s
}

// withTail returns r with the words of rest, the text after a bare
// password value, masked up to the first setting of the connection itself.
// A bare value ends at whitespace, and in a URL's query at "&", so a
// password holding a space, a tab or an "&", written unquoted or
// unencoded, leaves words behind: words that are not settings (no "="),
// which a parser quotes back as it rejects them, and words that read as
// settings ("pa ss=word"), which the server is sent as startup parameters
// and the flag package quotes back with the whole string when a flag
// rejects it. Either may be the rest of the password: every word is
// masked, and so are a setting's name and value, until a word that sets
// one of pgx's connection keywords (host, port, dbname and the like),
// which no password's tail is taken to be.
func (r redactor) withTail(rest string) redactor {
	words := strings.FieldsFunc(rest, func(c rune) bool { return unicode.IsSpace(c) || c == '&' })
	for i, word := range words {
		key, value, isSetting := strings.Cut(word, "=")
		if !isSetting && i+1 < len(words) && strings.HasPrefix(words[i+1], "=") {
			isSetting = true // a spaced setting: key = value
		}
		if isSetting && connectionKeywords[strings.ToLower(key)] {
			break
		}
		if word == "=" {
			continue
		}
		r = r.with(word).with(key).with(value)
		// A URL's parser may cut a word of the tail as it cuts a bare
		// value, at any of a URL's separators, and print a piece: the
		// tail "00@0202" of password=&00@0202 was printed as "@0202",
		// the host Go's parser found after the URL's last "@".
		for _, piece := range strings.FieldsFunc(word, func(c rune) bool { return strings.ContainsRune("@/:?#&=", c) }) {
			r = r.with(piece)
		}
	}
	return r
}

// connectionKeywords are the keywords pgx reads as the connection's own
// settings rather than startup parameters for the server.
var connectionKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "database": true, "dbname": true, "user": true,
	"password": true, "passfile": true, "connect_timeout": true, "sslmode": true, "sslkey": true,
	"sslcert": true, "sslcertmode": true, "sslrootcert": true, "sslnegotiation": true,
	"sslpassword": true, "sslsni": true, "krbspn": true, "krbsrvname": true,
	"target_session_attrs": true, "service": true, "servicefile": true,
	"min_protocol_version": true, "max_protocol_version": true, "channel_binding": true,
	"require_auth": true,
}

// with returns r with secret and its percent-decoded form added, each also
// as Go's %q and %+q spell it: the flag package quotes the values it
// rejects, escaping a quote, a backslash or a control character in them.
func (r redactor) with(secret string) redactor {
	add := func(s string) {
		if s == "" {
			return
		}
		quoted, ascii := strconv.Quote(s), strconv.QuoteToASCII(s)
		for _, form := range []string{s, quoted[1 : len(quoted)-1], ascii[1 : len(ascii)-1]} {
			if !slices.Contains(r, form) {
				r = append(r, form)
			}
		}
	}
	add(secret)
	// The flag package reads "-name=value" as a flag name cut at its first
	// "=", and quotes only that name when it does not know it: a URL given
	// as a flag shows its password up to its first "=".
	if i := strings.IndexByte(secret, '='); i > 0 {
		add(secret[:i])
	}
	if d, err := url.PathUnescape(secret); err == nil {
		add(d)
	}
	if d, err := url.QueryUnescape(secret); err == nil {
		add(d)
	}
	slices.SortStableFunc(r, func(a, b string) int { return len(b) - len(a) })
	return r
}

// mask masks every secret in s. Every occurrence of every secret in s is
// found first and each run of bytes they cover is masked once: masking one
// secret before looking for the next would break an occurrence of the next
// that overlaps it, and leave that secret's tail printed (a password
// "0@22222" in a URL whose user information, as Go reads it, ends in "0").
func (r redactor) mask(s string) string {
	var covered []bool
	for _, secret := range r {
		for i := 0; i < len(s); {
			j := strings.Index(s[i:], secret)
			if j < 0 {
				break
			}
			if covered == nil {
				covered = make([]bool, len(s))
			}
			for k := i + j; k < i+j+len(secret); k++ {
				covered[k] = true
			}
			i += j + 1
		}
	}
	if covered == nil {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case !covered[i]:
			b.WriteByte(s[i])
		case i == 0 || !covered[i-1]:
			b.WriteString(mask)
		}
	}
	return b.String()
}

// redact masks every secret in s and folds it onto one line.
func (r redactor) redact(s string) string {
	s = r.mask(s)
	// pgx puts each failed connection attempt on a line of its own.
	s = strings.ReplaceAll(s, ":\n\t", ": ")
	s = strings.ReplaceAll(s, "\n\t", "; ")
	return strings.ReplaceAll(s, "\n", "; ")
}

// wrap returns err with its text redacted and any driver error in it
// sanitized; errors.Is and errors.As still see the cause.
func (r redactor) wrap(err error) error {
	if err == nil {
		return nil
	}
	return r.wrapText(err.Error(), err)
}

// wrapText returns an error whose text is text, redacted, and whose cause
// is err. A driver error that is not sanitized yet (one holding a
// connection config, say) is replaced by its sanitized form.
func (r redactor) wrapText(text string, err error) error {
	var dbErr *postgres.DatabaseError
	var admissionErr *postgres.AdmissionError
	var maintErr *postgres.MaintenanceError
	if !errors.As(err, &dbErr) && !errors.As(err, &admissionErr) && !errors.As(err, &maintErr) {
		err = pgerror.Sanitize(err)
	}
	return &redactedError{text: r.redact(text), err: err}
}

// commandSecrets finds every password a command line could carry: in any
// argument (a URL or keyword/value string, given to a flag or stray), in
// $RUNLIMIT_DATABASE_URL and in $PGPASSWORD.
func commandSecrets(args []string, getenv func(string) string) redactor {
	var r redactor
	for _, a := range append(slices.Clip(args), getenv(envDatabaseURL)) {
		for _, secret := range urlSecrets(a) {
			r = r.with(secret)
		}
	}
	return r.with(getenv("PGPASSWORD"))
}

// maskingWriter masks secrets in everything written through it, a line at
// a time, so that a secret split across writes is still found.
type maskingWriter struct {
	mu      sync.Mutex
	w       io.Writer
	secrets redactor
	partial []byte
}

func newMaskingWriter(w io.Writer, secrets redactor) *maskingWriter {
	return &maskingWriter{w: w, secrets: secrets}
}

func (m *maskingWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.partial = append(m.partial, p...)
	if i := bytes.LastIndexByte(m.partial, '\n'); i >= 0 {
		lines := escapeControls(m.secrets.mask(string(m.partial[:i+1])))
		m.partial = append(m.partial[:0], m.partial[i+1:]...)
		if _, err := io.WriteString(m.w, lines); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what is left of an unfinished line.
func (m *maskingWriter) Flush() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.partial) > 0 {
		_, _ = io.WriteString(m.w, escapeControls(m.secrets.mask(string(m.partial))))
		m.partial = m.partial[:0]
	}
}

// escapeControls returns s with every control character but a line break
// and a tab written as Go escapes it in a quoted string (\x1b, \r,
// \u009b). The flag package prints some arguments back as they were given
// (an unknown flag's name, a malformed one), and an argument holding an
// escape sequence or a carriage return would otherwise move the cursor,
// recolour or retitle the operator's terminal, or forge a line of a log.
// Bytes that are not UTF-8 are left as they are: no terminal reads them
// as a control.
func escapeControls(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isControl reports whether r is a C0 or C1 control character, DEL
// included, other than a line break or a tab.
func isControl(r rune) bool {
	return r != '\n' && r != '\t' && (r < 0x20 || r >= 0x7f && r < 0xa0)
}

// redactedError is an error whose text has had a URL's secrets masked. Only
// its own text is ever printed.
type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }

func (e *redactedError) Unwrap() error { return e.err }
