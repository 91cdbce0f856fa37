package pgtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewServiceRole creates a role holding exactly the privileges the postgres
// package documents for a service running the store on schema, and nothing
// else: no ownership, no CREATE on the schema, no TRUNCATE.
func (d *Database) NewServiceRole(t testing.TB, schema string) *Role {
	t.Helper()
	role := d.NewRole(t, "svc")
	r, s := pgx.Identifier{role.Name}.Sanitize(), pgx.Identifier{schema}.Sanitize()
	d.exec(t, `
		GRANT USAGE ON SCHEMA `+s+` TO `+r+`;
		GRANT SELECT, INSERT, UPDATE, DELETE ON `+s+`.runlimit_fixed_windows TO `+r+`;
		GRANT SELECT, UPDATE (capacity_shard) ON `+s+`.runlimit_capacity_shards TO `+r+`;
		GRANT SELECT ON `+s+`.runlimit_schema_version TO `+r+`;
		GRANT EXECUTE ON FUNCTION `+s+`.runlimit_lock_counter(bigint, bytea, bytea, smallint, text, text) TO `+r)
	return role
}

// PlantShadowSchema plays a role that may only create schemas in d: it
// creates a schema named after victim, which victim's default search_path
// ("$user", public) searches first, with look-alikes of every table and
// function of Runlimit's and of the built-ins the store calls, usable by
// everyone. The look-alike lock function and tables admit every check (no
// counter is ever found, every shard has room) and record every key they
// see; [Database.ShadowCaptures] counts them. The look-alike ledger says
// every shard holds 7 rows, and the look-alike table holds one expired
// counter.
func (d *Database) PlantShadowSchema(t testing.TB, victim string) {
	t.Helper()
	hostile := d.NewRole(t, "hostile")
	d.exec(t, "GRANT CREATE ON DATABASE "+pgx.Identifier{d.Name}.Sanitize()+" TO "+pgx.Identifier{hostile.Name}.Sanitize())
	s := pgx.Identifier{victim}.Sanitize()
	pool := hostile.NewPool(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := pool.Exec(ctx, `
		CREATE SCHEMA `+s+`;
		CREATE TABLE `+s+`.captured (fingerprint bytea, subject bytea);
		CREATE TABLE `+s+`.runlimit_fixed_windows (
			policy_id text, scope_id text, config_fingerprint bytea, subject_key bytea,
			window_started_at timestamptz, window_expires_at timestamptz, used bigint, capacity_shard smallint);
		CREATE TABLE `+s+`.runlimit_capacity_shards (capacity_shard smallint PRIMARY KEY, row_count bigint);
		CREATE TABLE `+s+`.runlimit_schema_version (version int4);
		INSERT INTO `+s+`.runlimit_schema_version VALUES (999);
		INSERT INTO `+s+`.runlimit_capacity_shards SELECT g, 7 FROM generate_series(0, 255) AS g;
		INSERT INTO `+s+`.runlimit_fixed_windows VALUES ('p', 's', '\x00', '\x00', '2000-01-01', '2000-01-02', 1);

		-- Rows written to the look-alike table are captured, never stored.
		CREATE FUNCTION `+s+`.capture() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO `+s+`.captured VALUES (NEW.config_fingerprint, NEW.subject_key);
			RETURN NULL;
		END $$;
		CREATE TRIGGER capture BEFORE INSERT ON `+s+`.runlimit_fixed_windows
			FOR EACH ROW EXECUTE FUNCTION `+s+`.capture();

		-- Every form of the lock function: the key is never found, the shard
		-- is empty, and the key is captured.
		CREATE FUNCTION `+s+`.runlimit_lock_counter(
			lock_id bigint, fingerprint bytea, subject bytea, shard smallint, a text, b text,
			OUT used bigint, OUT started_at timestamptz, OUT expires_at timestamptz,
			OUT shard_rows bigint, OUT sampled_at timestamptz)
		LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO `+s+`.captured VALUES (fingerprint, subject);
			shard_rows := 0;
			sampled_at := pg_catalog.clock_timestamp();
		END $$;
		CREATE FUNCTION `+s+`.runlimit_lock_counter(
			lock_id bigint, fingerprint bytea, subject bytea, shard smallint, a text,
			OUT used bigint, OUT started_at timestamptz, OUT expires_at timestamptz,
			OUT shard_rows bigint, OUT sampled_at timestamptz)
		LANGUAGE sql AS $$ SELECT * FROM `+s+`.runlimit_lock_counter(lock_id, fingerprint, subject, shard, a, a) $$;
		CREATE FUNCTION `+s+`.runlimit_lock_counter(
			lock_id double precision, fingerprint text, subject text, shard double precision, a text, b text,
			OUT used bigint, OUT started_at timestamptz, OUT expires_at timestamptz,
			OUT shard_rows bigint, OUT sampled_at timestamptz)
		LANGUAGE sql AS $$ SELECT NULL::bigint, NULL::timestamptz, NULL::timestamptz, 0::bigint, pg_catalog.clock_timestamp() $$;

		-- Built-ins the store calls, in forms that would win for arguments
		-- of unknown type.
		CREATE FUNCTION `+s+`.clock_timestamp() RETURNS timestamptz LANGUAGE sql
			AS $$ SELECT '2000-01-01'::timestamptz $$;
		CREATE FUNCTION `+s+`.pg_advisory_xact_lock(double precision) RETURNS void LANGUAGE sql
			AS $$ SELECT NULL::void $$;
		CREATE FUNCTION `+s+`.set_config(text, text, text) RETURNS text LANGUAGE sql
			AS $$ SELECT 'x' $$;

		GRANT USAGE ON SCHEMA `+s+` TO PUBLIC;
		GRANT ALL ON ALL TABLES IN SCHEMA `+s+` TO PUBLIC;
		GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA `+s+` TO PUBLIC;`)
	if err != nil {
		t.Fatalf("pgtest: plant the shadow schema: %v", err)
	}
}

// ShadowCaptures returns how many keys the objects [Database.PlantShadowSchema]
// planted for victim have seen.
func (d *Database) ShadowCaptures(t testing.TB, victim string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int
	if err := d.Pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{victim, "captured"}.Sanitize()).Scan(&n); err != nil {
		t.Fatalf("pgtest: count the shadow schema's captures: %v", err)
	}
	return n
}

func (d *Database) exec(t testing.TB, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.Pool.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// PlantVersionView plays a role holding CREATE on schema, as every role
// held on public before PostgreSQL 15: it creates, in schema, a view named
// like the migrations' version table and one named like sqlx's, each
// calling a function of its own that records its call, and returns a
// function that counts the calls. The names must be free: the test drops
// the real version table first, as a schema vendored into a host's
// migrations lacks it.
func (d *Database) PlantVersionView(t testing.TB, schema string) (calls func() int) {
	t.Helper()
	hostile := d.NewRole(t, "planter")
	s, r := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{hostile.Name}.Sanitize()
	d.exec(t, "GRANT CREATE ON SCHEMA "+s+" TO "+r)
	calls = func() int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var n int
		if err := d.Pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{hostile.Name, "calls"}.Sanitize()).Scan(&n); err != nil {
			t.Fatalf("pgtest: count the planted views' calls: %v", err)
		}
		return n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The calls are recorded in a schema of the planter's own, which the
	// views' callers may write to.
	d.exec(t, "GRANT CREATE ON DATABASE "+pgx.Identifier{d.Name}.Sanitize()+" TO "+r)
	_, err := hostile.NewPool(t, nil).Exec(ctx, `
		CREATE SCHEMA `+r+`;
		CREATE TABLE `+r+`.calls (at timestamptz DEFAULT pg_catalog.now());
		GRANT USAGE ON SCHEMA `+r+` TO PUBLIC;
		GRANT INSERT ON `+r+`.calls TO PUBLIC;
		CREATE FUNCTION `+s+`.runlimit_seen() RETURNS int4 LANGUAGE sql VOLATILE AS $$
			INSERT INTO `+r+`.calls DEFAULT VALUES RETURNING 999 $$;
		CREATE VIEW `+s+`.runlimit_schema_version AS SELECT `+s+`.runlimit_seen() AS version;
		CREATE VIEW `+s+`._sqlx_migrations AS
			SELECT `+s+`.runlimit_seen()::bigint AS version, ''::text AS description,
			       pg_catalog.now() AS installed_on, true AS success, '\x'::bytea AS checksum,
			       0::bigint AS execution_time;
		GRANT SELECT ON `+s+`.runlimit_schema_version, `+s+`._sqlx_migrations TO PUBLIC;`)
	if err != nil {
		t.Fatalf("pgtest: plant the version views: %v", err)
	}
	return calls
}

// SetRoleSetting makes role start every session on d with the server
// setting name set to values (a list, for a list setting such as
// search_path), as an operator's ALTER ROLE ... IN DATABASE ... SET does
// (a superuser's, for settings only superusers may change). It lasts as
// long as the role: dropping the role drops the setting.
func (d *Database) SetRoleSetting(t testing.TB, role *Role, name string, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// SET takes no parameters, so each value is quoted as a literal.
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = quoteLiteral(v)
	}
	sql := "ALTER ROLE " + pgx.Identifier{role.Name}.Sanitize() + " IN DATABASE " + pgx.Identifier{d.Name}.Sanitize() +
		" SET " + pgx.Identifier{name}.Sanitize() + " = " + strings.Join(quoted, ", ")
	if _, err := mustServer(t).admin.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: set %s for role %s: %v", name, role.Name, err)
	}
}

// quoteLiteral quotes s as a standard SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// PlantLookalikeEquals creates, in d, the schema lookalike (usable by
// everyone) holding an = on bytea that is always true, and has role's
// sessions search it before pg_catalog (ALTER ROLE ... SET search_path):
// the trap a search_path naming another schema before pg_catalog sets for
// every operator a statement leaves unqualified.
func (d *Database) PlantLookalikeEquals(t testing.TB, role *Role) {
	t.Helper()
	d.exec(t, `
		CREATE SCHEMA lookalike;
		CREATE FUNCTION lookalike.always(bytea, bytea) RETURNS boolean
			LANGUAGE sql IMMUTABLE AS 'SELECT true';
		CREATE OPERATOR lookalike.= (LEFTARG = bytea, RIGHTARG = bytea, FUNCTION = lookalike.always);
		GRANT USAGE ON SCHEMA lookalike TO PUBLIC`)
	d.SetRoleSetting(t, role, "search_path", "lookalike", "pg_catalog", "public")
}
