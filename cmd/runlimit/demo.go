package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app"
	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

const demoSummary = `Runs the login admission example: every attempt checks the client's limit
(40 a minute) AND the identity's limit (8 a minute) as one atomic batch.
One client first retries one identity, then sprays other identities, then
retries after the window has passed. Time is simulated, so it runs instantly.`

// demoSecret keys the demo's subject hashes. Real services load a random
// secret of at least 32 bytes from secret storage.
const demoSecret = "runlimit-demo-secret-not-for-production"

// demoAttempt is one login attempt of the scenario.
type demoAttempt struct {
	after    time.Duration // simulated time to let pass before the attempt
	identity string
}

// demoRow is one line of the demo's table.
type demoRow struct {
	attempt      int
	at           time.Duration
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
		attempts = append(attempts, demoAttempt{after: time.Second, identity: "user@example.test"})
	}
	// The same client sprays other identities: the client limit (40) stops it.
	for i := range 34 {
		attempts = append(attempts, demoAttempt{after: time.Second, identity: fmt.Sprintf("victim%02d@example.test", i+1)})
	}
	// Once both windows, anchored at the first attempt, have ended, the user
	// gets in again.
	attempts = append(attempts, demoAttempt{after: 18 * time.Second, identity: "user@example.test"})
	attempts[0].after = 0
	return attempts
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", demoSummary, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	clock := memory.NewManualClock()
	store, err := memory.New(memory.Config{MaxKeys: 50_000, Shards: 64, Clock: clock})
	if err != nil {
		return err
	}
	rows, err := playDemo(ctx, store, clock.Advance)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Login admission on the memory store: client 40/min AND identity 8/min, checked atomically.")
	fmt.Fprintln(stdout)
	return printDemo(stdout, rows)
}

// playDemo runs the scenario against store. advance moves the store's time.
func playDemo(ctx context.Context, store ports.Store, advance func(time.Duration)) ([]demoRow, error) {
	clientPolicy, err := domain.ParsePolicy("auth.login", "client", 40, time.Minute)
	if err != nil {
		return nil, err
	}
	identityPolicy, err := domain.ParsePolicy("auth.login", "identity", 8, time.Minute)
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
	for i, a := range demoScenario() {
		if a.after > 0 {
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
		row := demoRow{attempt: i + 1, at: now, identity: a.identity, outcome: d.Outcome(), clientLeft: "-", identityLeft: "-"}
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

func printDemo(w io.Writer, rows []demoRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ATTEMPT\tTIME\tIDENTITY\tOUTCOME\tDENIED BY\tRETRY-AFTER (S)\tCLIENT LEFT\tIDENTITY LEFT")
	for _, r := range rows {
		denied := r.deniedCheck
		if denied == "" {
			denied, r.retrySeconds = "-", "-"
		}
		fmt.Fprintf(tw, "%d\t+%ds\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.attempt, int(r.at/time.Second), r.identity, r.outcome, denied, r.retrySeconds, r.clientLeft, r.identityLeft)
	}
	return tw.Flush()
}
