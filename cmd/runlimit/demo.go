package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

const demoSummary = `Runs the login admission example: every attempt checks the client's limit
(40 a minute) AND the identity's limit (8 a minute) as one atomic batch.
One client first retries one identity, then sprays other identities, then
retries after the window has passed. Time is simulated, so it runs instantly.

With --database-url the example runs on PostgreSQL instead, whose schema
(--schema) must already be migrated ("runlimit migrate"). Time is then the
database's: the attempts come as one burst, without the final retry a minute
later, and the policy ids carry a random suffix so that runs never share
counters. The demo reads only the flag, never $RUNLIMIT_DATABASE_URL.`

// demoSecret keys the demo's subject hashes. Real services load a random
// secret of at least 32 bytes from secret storage.
const demoSecret = "runlimit-demo-secret-not-for-production"

// demoAttempt is one login attempt of the scenario.
type demoAttempt struct {
	after    time.Duration // simulated time to let pass before the attempt
	phase    string        // which part of the scenario, as the table labels it
	identity string
}

// The demo's phases, as its table labels them.
const (
	phaseRetryBurst    = "retry burst"
	phaseIdentitySpray = "identity spray"
	phaseRenewal       = "renewal"
)

// demoLegend explains the phases above the table; the PostgreSQL demo,
// which cannot wait for the windows to end, prints it without
// demoRenewalLegend.
const (
	demoLegend = `Phases: retry burst    one user retries a password ten times; the identity limit (8) stops it.
        identity spray the same client tries 34 other identities; the client limit (40) stops it.`
	demoRenewalLegend = `        renewal        once both windows have ended, the user gets in again.`
)

// demoRow is one line of the demo's table.
type demoRow struct {
	attempt      int
	at           time.Duration
	phase        string
	identity     string
	outcome      domain.Outcome
	deniedCheck  string // "client" or "identity" when denied
	retrySeconds string // Retry-After, whole seconds, when denied
	clientLeft   string
	identityLeft string
}

// demoScenario is the attempts the demo makes from one client address, one
// a second.
func demoScenario() []demoAttempt {
	var attempts []demoAttempt
	// A user mistypes a password ten times: the identity limit (8) stops it.
	for range 10 {
		attempts = append(attempts, demoAttempt{after: time.Second, phase: phaseRetryBurst, identity: "user@example.test"})
	}
	// The same client sprays other identities: the client limit (40) stops it.
	for i := range 34 {
		attempts = append(attempts, demoAttempt{after: time.Second, phase: phaseIdentitySpray, identity: fmt.Sprintf("victim%02d@example.test", i+1)})
	}
	// Once both windows, anchored at the first attempt, have ended, the user
	// gets in again.
	attempts = append(attempts, demoAttempt{after: 18 * time.Second, phase: phaseRenewal, identity: "user@example.test"})
	attempts[0].after = 0
	return attempts
}

// demoPolicyID is the policy id of the demo's two policies on the memory
// store; on PostgreSQL it gets a suffix per run.
const demoPolicyID = "auth.login"

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", demoSummary, stderr)
	addDatabaseFlag(fs, false)
	schema := addSchemaFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkSchema(*schema); err != nil {
		return err
	}
	if isSet(fs, schemaFlagName) && !isSet(fs, databaseFlagName) {
		return fmt.Errorf("%w: --%s needs --%s: the memory demo has no schema", errUsage, schemaFlagName, databaseFlagName)
	}
	if isSet(fs, databaseFlagName) {
		// Only the flag: $RUNLIMIT_DATABASE_URL never turns the memory demo
		// into a PostgreSQL one.
		u, err := databaseURL(fs, func(string) string { return "" })
		if err != nil {
			return err
		}
		return runPostgresDemo(ctx, u, *schema, stdout)
	}
	clock := memory.NewManualClock()
	store, err := memory.New(memory.Config{MaxKeys: 50_000, Shards: 64, Clock: clock})
	if err != nil {
		return err
	}
	rows, err := playDemo(ctx, store, demoPolicyID, demoScenario(), clock.Advance)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Login admission on the memory store: client 40/min AND identity 8/min, checked atomically.")
	fmt.Fprintln(stdout, demoLegend)
	fmt.Fprintln(stdout, demoRenewalLegend)
	fmt.Fprintln(stdout)
	return printDemo(stdout, rows, true)
}

// runPostgresDemo plays the scenario's burst, without its simulated minute,
// on the PostgreSQL database at rawURL.
func runPostgresDemo(ctx context.Context, rawURL, schema string, stdout io.Writer) error {
	db, err := openDatabase(ctx, rawURL, 0)
	if err != nil {
		return err
	}
	defer db.close()
	store, err := postgres.New(db.pool, postgres.Config{Schema: schema})
	if err != nil {
		return err
	}
	// Closed before the pool (deferred after it): Close waits for the
	// store's work left behind by a call whose deadline struck.
	defer store.Close()
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	policyID := demoPolicyID + ".demo-" + hex.EncodeToString(suffix[:])
	// The last attempt waits a minute of simulated time; the database's
	// clock cannot be moved, so the burst stops before it.
	attempts := demoScenario()
	attempts = attempts[:len(attempts)-1]
	rows, err := playDemo(ctx, store, policyID, attempts, nil)
	if err != nil {
		return db.wrap(err)
	}
	fmt.Fprintln(stdout, "Login admission on PostgreSQL: client 40/min AND identity 8/min, checked atomically.")
	fmt.Fprintf(stdout, "Time is the database's, so the %d attempts come as one burst, without the renewal. Policy id %s is this run's own.\n", len(rows), policyID)
	fmt.Fprintln(stdout, demoLegend)
	fmt.Fprintln(stdout)
	if err := printDemo(stdout, rows, false); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, `The run's counters expire a minute after their first check; "runlimit cleanup" then deletes them.`)
	return nil
}

// playDemo runs attempts against store under policies named policyID.
// advance moves the store's time; nil means time cannot be moved, and the
// attempts' waits are skipped.
func playDemo(ctx context.Context, store ports.Store, policyID string, attempts []demoAttempt, advance func(time.Duration)) ([]demoRow, error) {
	clientPolicy, err := domain.ParsePolicy(policyID, "client", 40, time.Minute)
	if err != nil {
		return nil, err
	}
	identityPolicy, err := domain.ParsePolicy(policyID, "identity", 8, time.Minute)
	if err != nil {
		return nil, err
	}
	hasher, err := domain.NewKeyHasher([]byte(demoSecret))
	if err != nil {
		return nil, err
	}
	limiter, err := app.NewLimiter(store, app.LimiterConfig{})
	if err != nil {
		return nil, err
	}
	client := hasher.KeyString(clientPolicy, "client-network:192.0.2.4")

	var rows []demoRow
	var now time.Duration
	for i, a := range attempts {
		if a.after > 0 && advance != nil {
			advance(a.after)
			now += a.after
		}
		checks := []domain.Check{
			domain.NewCheck(clientPolicy, client),
			domain.NewCheck(identityPolicy, hasher.KeyString(identityPolicy, a.identity)),
		}
		d, err := limiter.CheckAll(ctx, checks)
		if err != nil {
			return nil, fmt.Errorf("attempt %d: %w", i+1, err)
		}
		row := demoRow{attempt: i + 1, at: now, phase: a.phase, identity: a.identity, outcome: d.Outcome(), clientLeft: "-", identityLeft: "-"}
		if index, denial, denied := d.Denied(); denied {
			row.deniedCheck = [...]string{"client", "identity"}[index]
			row.retrySeconds = "-"
			if s, ok := denial.RetryAfterSeconds(); ok {
				row.retrySeconds = strconv.FormatInt(s, 10)
			}
		} else {
			c, _ := d.Decisions()[0].Allowance()
			id, _ := d.Decisions()[1].Allowance()
			row.clientLeft = strconv.FormatInt(c.Remaining, 10)
			row.identityLeft = strconv.FormatInt(id.Remaining, 10)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// printDemo prints rows as a table; withTime adds the simulated time of
// each attempt.
func printDemo(w io.Writer, rows []demoRow, withTime bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if withTime {
		fmt.Fprint(tw, "ATTEMPT\tTIME\t")
	} else {
		fmt.Fprint(tw, "ATTEMPT\t")
	}
	fmt.Fprintln(tw, "PHASE\tIDENTITY\tOUTCOME\tDENIED BY\tRETRY-AFTER (S)\tCLIENT LEFT\tIDENTITY LEFT")
	for _, r := range rows {
		denied := r.deniedCheck
		if denied == "" {
			denied, r.retrySeconds = "-", "-"
		}
		if withTime {
			fmt.Fprintf(tw, "%d\t+%ds\t", r.attempt, int(r.at/time.Second))
		} else {
			fmt.Fprintf(tw, "%d\t", r.attempt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.phase, r.identity, r.outcome, denied, r.retrySeconds, r.clientLeft, r.identityLeft)
	}
	return tw.Flush()
}
