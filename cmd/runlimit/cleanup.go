package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/migrations"
)

const cleanupSummary = `Deletes expired counters from the PostgreSQL store, freeing their capacity
slots (an expired counter keeps its slot until it is deleted). Active counters
are never touched.

A round runs passes of at most --batch rows, each its own short transaction,
until a pass removes fewer than --batch rows (the backlog is gone) or
--max-passes passes have run. Without --every, cleanup runs one round and
exits. With --every, it runs a round at once and then one per interval until
SIGINT or SIGTERM, and exits 0; a failed round is reported and retried at the
next interval, except the first, which ends the command (so a wrong database
or a missing schema fails at once).`

// minEvery is the shortest --every: a shorter one (a nanosecond typed for
// a second) would run rounds back to back against the database.
const minEvery = time.Millisecond

// cleanupConfig is what the cleanup command was asked to do.
type cleanupConfig struct {
	batch     int           // rows per pass
	maxPasses int           // passes per round
	every     time.Duration // 0: one round; else at least minEvery
	// explain adds to a failed round's error the locks that kept it
	// waiting (see database.explainTimeout).
	explain func(error) error
}

func runCleanup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cleanup", cleanupSummary, stderr)
	addDatabaseFlag(fs, true)
	schema := addSchemaFlag(fs)
	var cfg cleanupConfig
	fs.IntVar(&cfg.batch, "batch", 1000, "rows deleted per pass, at least 1")
	fs.IntVar(&cfg.maxPasses, "max-passes", 1000, "passes per round at most, at least 1")
	fs.DurationVar(&cfg.every, "every", 0, "run a round every interval (at least 1ms) until interrupted; 0 runs one round")
	timeout := fs.Duration("timeout", postgres.DefaultTimeout, "time budget of one pass once it holds a connection, at most 60s")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case cfg.batch < 1:
		return fmt.Errorf("%w: --batch is %d, want at least 1", errUsage, cfg.batch)
	case cfg.maxPasses < 1:
		return fmt.Errorf("%w: --max-passes is %d, want at least 1", errUsage, cfg.maxPasses)
	case cfg.every < 0 || (cfg.every > 0 && cfg.every < minEvery):
		return fmt.Errorf("%w: --every is %s, want 0 (one round) or at least %s", errUsage, cfg.every, minEvery)
	case *timeout <= 0 || *timeout > postgres.MaxTimeout:
		return fmt.Errorf("%w: --timeout is %s, want more than 0 and at most %s", errUsage, *timeout, postgres.MaxTimeout)
	}
	s, err := schemaOf(fs, *schema, getenv)
	if err != nil {
		return err
	}
	*schema = s
	db, err := connect(ctx, fs, getenv, *timeout)
	if err != nil {
		return err
	}
	defer db.close()
	store, err := postgres.New(db.pool, postgres.Config{Schema: *schema, OperationTimeout: *timeout})
	if err != nil {
		return err
	}
	// Closed before the pool (deferred after it): Close waits for the
	// store's work left behind by a call whose deadline struck.
	defer store.Close()
	// Nothing is deleted from, or fires triggers of, a schema in which a
	// role other than its owner planted an object under Runlimit's names.
	// Bounded as a pass is: a server that stopped answering since the
	// connection was checked must not keep the command waiting.
	ownersCtx, cancel := context.WithTimeout(ctx, *timeout)
	err = migrations.CheckOwners(ownersCtx, db.pool, *schema)
	cancel()
	if err != nil {
		return db.wrap(db.explainTimeout(err, *schema, *timeout))
	}
	cfg.explain = func(err error) error { return db.explainTimeout(err, *schema, *timeout) }
	if cfg.every == 0 {
		r, err := cleanupRound(ctx, store, cfg)
		if err != nil {
			return db.wrap(cfg.explain(err))
		}
		fmt.Fprintln(stdout, r)
		return nil
	}
	return cleanupLoop(ctx, db, store, cfg, stdout, stderr)
}

// cleanupLoop runs a round at once and then one every cfg.every, until ctx
// is done.
func cleanupLoop(ctx context.Context, db *database, store *postgres.Store, cfg cleanupConfig, stdout, stderr io.Writer) error {
	ticker := time.NewTicker(cfg.every)
	defer ticker.Stop()
	var total int64
	for round := 1; ; round++ {
		r, err := cleanupRound(ctx, store, cfg)
		total += int64(r.removed)
		switch {
		case ctx.Err() != nil:
			// Interrupted, most likely in the middle of a pass.
			stopped(stdout, total, err)
			return nil
		case err != nil && round == 1:
			return db.wrap(cfg.explain(err))
		case err != nil:
			fmt.Fprintf(stderr, "runlimit cleanup: %s: %v (retrying in %s)\n", time.Now().UTC().Format(time.RFC3339), db.wrap(cfg.explain(err)), cfg.every)
		default:
			fmt.Fprintf(stdout, "%s %s\n", time.Now().UTC().Format(time.RFC3339), r)
		}
		select {
		case <-ctx.Done():
			stopped(stdout, total, nil)
			return nil
		case <-ticker.C:
		}
	}
}

// stopped reports the end of a cleanup loop. err is the error of a pass the
// interruption cut short, if any.
func stopped(w io.Writer, total int64, err error) {
	fmt.Fprintf(w, "stopped: removed %d expired %s in all", total, plural64(total, "row", "rows"))
	if maint := (*postgres.MaintenanceError)(nil); errors.As(err, &maint) && maint.MayHaveRemovedRows() {
		fmt.Fprint(w, "; the interrupted pass may have removed more")
	}
	fmt.Fprintln(w)
}

// cleanupResult is what one round did.
type cleanupResult struct {
	removed int
	passes  int
	more    bool // the round stopped at max passes with a full last pass
}

func (r cleanupResult) String() string {
	s := fmt.Sprintf("removed %d expired %s in %d %s", r.removed, plural(r.removed, "row", "rows"), r.passes, plural(r.passes, "pass", "passes"))
	if r.more {
		s += "; stopped at --max-passes, more expired rows may remain"
	}
	return s
}

// cleanupRound deletes expired rows a pass at a time, until a pass comes
// back short or cfg.maxPasses passes have run. A failed pass ends the round;
// the result still counts the passes before it, and the error, a
// *postgres.MaintenanceError, says whether the failed pass may have removed
// rows.
func cleanupRound(ctx context.Context, store *postgres.Store, cfg cleanupConfig) (cleanupResult, error) {
	var r cleanupResult
	for r.passes < cfg.maxPasses {
		n, err := store.CleanupExpired(ctx, cfg.batch)
		if err != nil {
			return r, fmt.Errorf("pass %d, after %d rows removed by earlier passes: %w", r.passes+1, r.removed, err)
		}
		r.passes++
		r.removed += n
		if n < cfg.batch {
			return r, nil
		}
	}
	r.more = true
	return r, nil
}

func plural(n int, one, many string) string { return plural64(int64(n), one, many) }

func plural64(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
