package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/runlimit/runlimit/adapters/postgres"
	"github.com/runlimit/runlimit/migrations"
)

const statusSummary = `Shows the PostgreSQL store's state: the schema version, the counters stored
(expired ones not yet cleaned up included) against the capacity, the fullest
capacity shards and their headroom (a shard at 0 denies new keys), the table
and index sizes, and live and dead tuples (PostgreSQL's estimates; many dead
tuples mean vacuum is not keeping up).

Headroom is measured against --rows-per-shard, which should match the services'
postgres.Config.RowsPerShard; without the flag, $RUNLIMIT_POSTGRES_ROWS_PER_SHARD
as the services read it. The reads, once connected, take at most --timeout
in all (a table lock held elsewhere, such as an ALTER TABLE's, makes them
wait). --json prints one JSON object with stable field names for scripts and
monitoring.`

// statusReport is the status command's JSON output. Its field names are
// stable: scripts and dashboards read them.
type statusReport struct {
	// SchemaVersion is the version in runlimit_schema_version, or null when
	// that table does not exist (a vendored schema).
	SchemaVersion *int32 `json:"schema_version"`
	// LatestSchemaVersion is the newest version this binary knows.
	LatestSchemaVersion int32         `json:"latest_schema_version"`
	Rows                int64         `json:"rows"`
	Capacity            int64         `json:"capacity"`
	RowsPerShard        int           `json:"rows_per_shard"`
	FullestShards       []shardReport `json:"fullest_shards"`
	TableBytes          int64         `json:"table_bytes"`
	IndexBytes          int64         `json:"index_bytes"`
	LiveTuples          int64         `json:"live_tuples"`
	DeadTuples          int64         `json:"dead_tuples"`
	// rust: the schema is untracked because a Rust Runlimit service
	// migrated it and it was not adopted yet.
	rust bool
}

// shardReport is one capacity shard in a statusReport.
type shardReport struct {
	Shard    int   `json:"shard"`
	Rows     int64 `json:"rows"`
	Headroom int64 `json:"headroom"`
}

func runStatus(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", statusSummary, stderr)
	addDatabaseFlag(fs, true)
	schema := addSchemaFlag(fs)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	rowsPerShard := fs.Int("rows-per-shard", postgres.DefaultRowsPerShard, "the services' rows per capacity shard, 1 to 65536, for headroom ($"+envRowsPerShard+" when the flag is absent)")
	timeout := fs.Duration("timeout", postgres.DefaultTimeout, "time budget of the status read once connected, at most 60s")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !isSet(fs, "rows-per-shard") {
		n, err := rowsPerShardFromEnv(getenv)
		if err != nil {
			return err
		}
		*rowsPerShard = n
	}
	if *rowsPerShard < 1 || *rowsPerShard > postgres.MaxRowsPerShard {
		return fmt.Errorf("%w: --rows-per-shard is %d, want 1 to %d", errUsage, *rowsPerShard, postgres.MaxRowsPerShard)
	}
	if *timeout <= 0 || *timeout > postgres.MaxTimeout {
		return fmt.Errorf("%w: --timeout is %s, want more than 0 and at most %s", errUsage, *timeout, postgres.MaxTimeout)
	}
	s, err := schemaOf(fs, *schema, getenv)
	if err != nil {
		return err
	}
	*schema = s
	latest, _, err := latestSchema(*schema)
	if err != nil {
		return err
	}
	db, err := connect(ctx, fs, getenv, *timeout)
	if err != nil {
		return err
	}
	defer db.close()
	store, err := postgres.New(db.pool, postgres.Config{Schema: *schema, RowsPerShard: *rowsPerShard, OperationTimeout: *timeout})
	if err != nil {
		return err
	}
	// Closed before the pool (deferred after it): Close waits for the
	// store's work left behind by a call whose deadline struck.
	defer store.Close()
	// Every read is bounded: a lock held on a table (an ALTER TABLE) must
	// not hang a monitoring script's status call.
	readCtx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	report, err := readStatus(readCtx, db, store, *schema)
	if err != nil {
		return db.wrap(db.explainTimeout(err, *schema, *timeout))
	}
	report.LatestSchemaVersion = latest
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return printStatus(stdout, report)
}

// envRowsPerShard is the variable app/wiring reads the service's rows per
// shard from (wiring.EnvPostgresRowsPerShard), so that status run in the
// service's environment measures headroom as the service counts it.
const envRowsPerShard = "RUNLIMIT_POSTGRES_ROWS_PER_SHARD"

// rowsPerShardFromEnv returns $RUNLIMIT_POSTGRES_ROWS_PER_SHARD as the
// service reads it, 0 and unset meaning the default, or a usage error
// naming the variable.
func rowsPerShardFromEnv(getenv func(string) string) (int, error) {
	v := getenv(envRowsPerShard)
	if v == "" {
		return postgres.DefaultRowsPerShard, nil
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%w: $%s is not a whole number", errUsage, envRowsPerShard)
	case n == 0:
		return postgres.DefaultRowsPerShard, nil
	case n < 0 || n > postgres.MaxRowsPerShard:
		return 0, fmt.Errorf("%w: $%s is %d, want 1 to %d (0 means %d)", errUsage, envRowsPerShard, n, postgres.MaxRowsPerShard, postgres.DefaultRowsPerShard)
	}
	return n, nil
}

func readStatus(ctx context.Context, db *database, store *postgres.Store, schema string) (statusReport, error) {
	// Nothing is read from an object another role planted under one of
	// Runlimit's names: a view named like the version table a vendored
	// schema lacks would run that role's code with the operator's rights.
	if err := migrations.CheckOwners(ctx, db.pool, schema); err != nil {
		return statusReport{}, err
	}
	version, tracked, err := schemaVersion(ctx, db.pool, schema)
	if err != nil {
		return statusReport{}, err
	}
	ts, err := store.TableStats(ctx)
	if err != nil {
		return statusReport{}, err
	}
	r := statusReport{
		Rows:          ts.Rows,
		Capacity:      ts.Capacity,
		RowsPerShard:  ts.RowsPerShard,
		FullestShards: make([]shardReport, len(ts.Fullest)),
		TableBytes:    ts.TableBytes,
		IndexBytes:    ts.IndexBytes,
		LiveTuples:    ts.LiveTuples,
		DeadTuples:    ts.DeadTuples,
	}
	if tracked {
		r.SchemaVersion = &version
	} else if r.rust, err = migrations.RustMigrated(ctx, db.pool, schema); err != nil {
		return statusReport{}, err
	}
	for i, sh := range ts.Fullest {
		r.FullestShards[i] = shardReport{Shard: sh.Shard, Rows: sh.Rows, Headroom: sh.Headroom}
	}
	return r, nil
}

func printStatus(w io.Writer, r statusReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	version := "not recorded (no runlimit_schema_version table: a vendored schema?)"
	switch {
	case r.SchemaVersion == nil && r.rust:
		version = `not recorded (a Rust Runlimit service migrated this schema: run "runlimit migrate" to adopt it)`
	case r.SchemaVersion == nil:
	case *r.SchemaVersion < r.LatestSchemaVersion:
		version = fmt.Sprintf(`%d (this runlimit knows %d: run "runlimit migrate")`, *r.SchemaVersion, r.LatestSchemaVersion)
	default:
		version = fmt.Sprintf("%d", *r.SchemaVersion)
	}
	fmt.Fprintf(tw, "schema version\t%s\n", version)
	fmt.Fprintf(tw, "rows\t%d of %d (%.2f%%), expired rows not yet cleaned up included\n", r.Rows, r.Capacity, percent(r.Rows, r.Capacity))
	fmt.Fprintf(tw, "rows per shard\t%d, 256 shards\n", r.RowsPerShard)
	fmt.Fprintf(tw, "table size\t%s\n", formatBytes(r.TableBytes))
	fmt.Fprintf(tw, "index size\t%s\n", formatBytes(r.IndexBytes))
	fmt.Fprintf(tw, "live tuples\t%d (estimate)\n", r.LiveTuples)
	fmt.Fprintf(tw, "dead tuples\t%d (estimate)\n", r.DeadTuples)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Fullest shards (a shard with no headroom denies new keys):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SHARD\tROWS\tHEADROOM\t")
	for _, sh := range r.FullestShards {
		fmt.Fprintf(tw, "%d\t%d\t%d\t\n", sh.Shard, sh.Rows, sh.Headroom)
	}
	return tw.Flush()
}

func percent(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// formatBytes prints n in binary units, as "8.0 KiB".
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	value, exp := float64(n)/unit, 0
	for value >= unit && exp < 4 {
		value /= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB (%d bytes)", value, "KMGTP"[exp], n)
}
