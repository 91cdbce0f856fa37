-- Runlimit's schema, name for name. From this step on the tables, columns,
-- constraints and index carry the names of the schema a Rust Runlimit
-- service creates, and its triggers behave the same, so that services in
-- both languages share one database (see the package documentation for the
-- order in which a mixed deployment migrates):
--
--   - the ledger's columns are capacity_shard and row_count;
--   - every rule of a counter row is a CHECK constraint of its own, named;
--   - a row's shard is a stored generated column, capacity_shard, with a
--     foreign key to its ledger row;
--   - the triggers raise Runlimit's SQLSTATEs: check_violation (23514) with
--     constraint runlimit_fixed_windows_immutable_storage_key for a changed
--     storage key, foreign_key_violation for a missing ledger row, and the
--     ledger's own CHECKs for a shard over its hard maximum or below zero.
--
-- Rows and their counts are kept: the renames change no data, the new
-- constraints hold for every row the previous rules let in, and the ledger
-- is not recounted. The previous release's functions name the old columns;
-- they are replaced here, and 006 adds back what only this library uses
-- (the lock function, the truncate trigger). The five-argument lock
-- function, kept for the release before the previous one, is dropped.

-- Nothing reads or writes either table until this step commits: no writer
-- may slip a row in between the ledger's counts and the new triggers.
LOCK TABLE {{.schema}}.runlimit_capacity_shards, {{.schema}}.runlimit_fixed_windows IN ACCESS EXCLUSIVE MODE;

DROP TRIGGER runlimit_capacity_truncate ON {{.schema}}.runlimit_fixed_windows;
DROP TRIGGER runlimit_fixed_windows_immutable_keys ON {{.schema}}.runlimit_fixed_windows;
DROP FUNCTION {{.schema}}.runlimit_capacity_count_truncated();
DROP FUNCTION {{.schema}}.runlimit_lock_counter(bigint, bytea, bytea, smallint, text);
DROP FUNCTION {{.schema}}.runlimit_lock_counter(bigint, bytea, bytea, smallint, text, text);

ALTER TABLE {{.schema}}.runlimit_capacity_shards RENAME COLUMN shard TO capacity_shard;
ALTER TABLE {{.schema}}.runlimit_capacity_shards RENAME COLUMN rows TO row_count;
ALTER TABLE {{.schema}}.runlimit_capacity_shards
    DROP CONSTRAINT runlimit_capacity_shards_shard_check,
    DROP CONSTRAINT runlimit_capacity_shards_rows_check,
    ADD CONSTRAINT runlimit_capacity_shards_valid_shard CHECK (capacity_shard BETWEEN 0 AND 255),
    ADD CONSTRAINT runlimit_capacity_shards_nonnegative_count CHECK (row_count >= 0),
    ADD CONSTRAINT runlimit_capacity_shards_hard_max CHECK (row_count <= 65536);

ALTER TABLE {{.schema}}.runlimit_fixed_windows
    DROP CONSTRAINT runlimit_fixed_windows_window_check,
    ADD CONSTRAINT runlimit_fixed_windows_policy_id_size CHECK (octet_length(policy_id) BETWEEN 1 AND 128),
    ADD CONSTRAINT runlimit_fixed_windows_scope_id_size CHECK (octet_length(scope_id) BETWEEN 1 AND 128),
    ADD CONSTRAINT runlimit_fixed_windows_fingerprint_size CHECK (octet_length(config_fingerprint) = 32),
    ADD CONSTRAINT runlimit_fixed_windows_subject_key_size CHECK (octet_length(subject_key) = 32),
    ADD CONSTRAINT runlimit_fixed_windows_valid_window CHECK (window_expires_at > window_started_at),
    ADD CONSTRAINT runlimit_fixed_windows_positive_usage CHECK (used > 0);

-- Adding a stored column rewrites the table, under the lock taken above.
ALTER TABLE {{.schema}}.runlimit_fixed_windows
    ADD COLUMN capacity_shard smallint NOT NULL
        GENERATED ALWAYS AS ((get_byte(config_fingerprint, 0) # get_byte(subject_key, 0))::smallint) STORED;
ALTER TABLE {{.schema}}.runlimit_fixed_windows
    ADD CONSTRAINT runlimit_fixed_windows_capacity_shard_fkey
        FOREIGN KEY (capacity_shard) REFERENCES {{.schema}}.runlimit_capacity_shards (capacity_shard);

ALTER INDEX {{.schema}}.runlimit_fixed_windows_expires_idx RENAME TO runlimit_fixed_windows_expiry_idx;

-- The ledger's triggers, on the new columns. Each locks the ledger rows it
-- changes in ascending shard order before changing them, the order the store
-- locks them in too, so two writers never wait on each other's ledger rows in
-- a cycle. The lock is FOR NO KEY UPDATE, the lock the count's UPDATE takes
-- anyway: FOR UPDATE would also wait for the FOR KEY SHARE locks that the
-- foreign key's checks of other inserts hold on the same ledger row, and two
-- inserts into one shard that both checked their key before either counted
-- would deadlock. A shard without a ledger row is a foreign key violation
-- (the foreign key reports it first; the check here holds even without it);
-- a count pushed past the hard maximum or below zero fails the ledger's own
-- CHECK, which names itself. The functions run as their owner, with a
-- pinned search_path, and name the ledger in full; unqualified names below
-- are variables, columns and the transition tables.
CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_capacity_count_inserted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    locked bigint;
BEGIN
    PERFORM 1
    FROM {{.schema}}.runlimit_capacity_shards AS c
    WHERE c.capacity_shard IN (SELECT n.capacity_shard FROM runlimit_inserted AS n)
    ORDER BY c.capacity_shard
    FOR NO KEY UPDATE;
    GET DIAGNOSTICS locked = ROW_COUNT;
    IF locked <> (SELECT count(DISTINCT n.capacity_shard) FROM runlimit_inserted AS n) THEN
        RAISE EXCEPTION 'runlimit: the capacity ledger has no row for the shard of a new counter'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'runlimit_fixed_windows_capacity_shard_fkey',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME;
    END IF;
    UPDATE {{.schema}}.runlimit_capacity_shards AS c
    SET row_count = c.row_count + d.n
    FROM (SELECT n.capacity_shard, count(*) AS n FROM runlimit_inserted AS n GROUP BY 1) AS d
    WHERE c.capacity_shard = d.capacity_shard;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_capacity_count_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    locked bigint;
BEGIN
    PERFORM 1
    FROM {{.schema}}.runlimit_capacity_shards AS c
    WHERE c.capacity_shard IN (SELECT o.capacity_shard FROM runlimit_deleted AS o)
    ORDER BY c.capacity_shard
    FOR NO KEY UPDATE;
    GET DIAGNOSTICS locked = ROW_COUNT;
    IF locked <> (SELECT count(DISTINCT o.capacity_shard) FROM runlimit_deleted AS o) THEN
        RAISE EXCEPTION 'runlimit: the capacity ledger has no row for the shard of a deleted counter'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'runlimit_fixed_windows_capacity_shard_fkey',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME;
    END IF;
    UPDATE {{.schema}}.runlimit_capacity_shards AS c
    SET row_count = c.row_count - d.n
    FROM (SELECT o.capacity_shard, count(*) AS n FROM runlimit_deleted AS o GROUP BY 1) AS d
    WHERE c.capacity_shard = d.capacity_shard;
    RETURN NULL;
END
$$;

-- A row's shard derives from its storage key, so changing the key would move
-- the row to another shard behind the ledger's back. Keys are immutable; a
-- counter under a new key is a new row.
CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_forbid_key_update() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'runlimit: the storage key of a counter cannot change'
        USING ERRCODE = 'check_violation', CONSTRAINT = 'runlimit_fixed_windows_immutable_storage_key',
              SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME;
END
$$;

CREATE TRIGGER runlimit_fixed_windows_immutable_storage_key
    BEFORE UPDATE OF policy_id, scope_id, config_fingerprint, subject_key
    ON {{.schema}}.runlimit_fixed_windows
    FOR EACH ROW
    WHEN (OLD.policy_id IS DISTINCT FROM NEW.policy_id
       OR OLD.scope_id IS DISTINCT FROM NEW.scope_id
       OR OLD.config_fingerprint IS DISTINCT FROM NEW.config_fingerprint
       OR OLD.subject_key IS DISTINCT FROM NEW.subject_key)
    EXECUTE FUNCTION {{.schema}}.runlimit_forbid_key_update();

---- create above / drop below ----

-- Back to version 4, rows and counts kept: the previous names, its one
-- window CHECK (the storage key rules move back into the insert trigger),
-- its trigger behaviour and its lock functions.
LOCK TABLE {{.schema}}.runlimit_capacity_shards, {{.schema}}.runlimit_fixed_windows IN ACCESS EXCLUSIVE MODE;

DROP TRIGGER runlimit_fixed_windows_immutable_storage_key ON {{.schema}}.runlimit_fixed_windows;
ALTER INDEX {{.schema}}.runlimit_fixed_windows_expiry_idx RENAME TO runlimit_fixed_windows_expires_idx;
ALTER TABLE {{.schema}}.runlimit_fixed_windows
    DROP CONSTRAINT runlimit_fixed_windows_capacity_shard_fkey,
    DROP COLUMN capacity_shard,
    DROP CONSTRAINT runlimit_fixed_windows_policy_id_size,
    DROP CONSTRAINT runlimit_fixed_windows_scope_id_size,
    DROP CONSTRAINT runlimit_fixed_windows_fingerprint_size,
    DROP CONSTRAINT runlimit_fixed_windows_subject_key_size,
    DROP CONSTRAINT runlimit_fixed_windows_valid_window,
    DROP CONSTRAINT runlimit_fixed_windows_positive_usage,
    ADD CONSTRAINT runlimit_fixed_windows_window_check CHECK (
        isfinite(window_started_at) AND isfinite(window_expires_at)
        AND window_expires_at > window_started_at
        AND used > 0);

ALTER TABLE {{.schema}}.runlimit_capacity_shards
    DROP CONSTRAINT runlimit_capacity_shards_valid_shard,
    DROP CONSTRAINT runlimit_capacity_shards_nonnegative_count,
    DROP CONSTRAINT runlimit_capacity_shards_hard_max;
ALTER TABLE {{.schema}}.runlimit_capacity_shards RENAME COLUMN capacity_shard TO shard;
ALTER TABLE {{.schema}}.runlimit_capacity_shards RENAME COLUMN row_count TO rows;
ALTER TABLE {{.schema}}.runlimit_capacity_shards
    ADD CONSTRAINT runlimit_capacity_shards_shard_check CHECK (shard BETWEEN 0 AND 255),
    ADD CONSTRAINT runlimit_capacity_shards_rows_check CHECK (rows BETWEEN 0 AND 65536);

-- Version 4's triggers: the insert trigger also holds the storage key rules,
-- a missing ledger row is data_corrupted, a changed key restrict_violation.
CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_capacity_count_inserted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    locked bigint;
BEGIN
    IF EXISTS (
        SELECT FROM runlimit_inserted AS n
        WHERE octet_length(n.policy_id) NOT BETWEEN 1 AND 128
           OR octet_length(n.scope_id) NOT BETWEEN 1 AND 128
           OR octet_length(n.config_fingerprint) <> 32
           OR octet_length(n.subject_key) <> 32) THEN
        RAISE EXCEPTION 'runlimit: new row of runlimit_fixed_windows has an invalid storage key'
            USING ERRCODE = 'check_violation';
    END IF;
    PERFORM 1
    FROM {{.schema}}.runlimit_capacity_shards AS c
    WHERE c.shard IN (SELECT get_byte(n.config_fingerprint, 0) # get_byte(n.subject_key, 0) FROM runlimit_inserted AS n)
    ORDER BY c.shard
    FOR UPDATE;
    GET DIAGNOSTICS locked = ROW_COUNT;
    IF locked <> (SELECT count(DISTINCT get_byte(n.config_fingerprint, 0) # get_byte(n.subject_key, 0)) FROM runlimit_inserted AS n) THEN
        RAISE EXCEPTION 'runlimit: capacity ledger is missing shards' USING ERRCODE = 'data_corrupted';
    END IF;
    UPDATE {{.schema}}.runlimit_capacity_shards AS c
    SET rows = c.rows + d.n
    FROM (SELECT get_byte(n.config_fingerprint, 0) # get_byte(n.subject_key, 0) AS shard, count(*) AS n
          FROM runlimit_inserted AS n GROUP BY 1) AS d
    WHERE c.shard = d.shard;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_capacity_count_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    locked bigint;
BEGIN
    PERFORM 1
    FROM {{.schema}}.runlimit_capacity_shards AS c
    WHERE c.shard IN (SELECT get_byte(o.config_fingerprint, 0) # get_byte(o.subject_key, 0) FROM runlimit_deleted AS o)
    ORDER BY c.shard
    FOR UPDATE;
    GET DIAGNOSTICS locked = ROW_COUNT;
    IF locked <> (SELECT count(DISTINCT get_byte(o.config_fingerprint, 0) # get_byte(o.subject_key, 0)) FROM runlimit_deleted AS o) THEN
        RAISE EXCEPTION 'runlimit: capacity ledger is missing shards' USING ERRCODE = 'data_corrupted';
    END IF;
    UPDATE {{.schema}}.runlimit_capacity_shards AS c
    SET rows = c.rows - d.n
    FROM (SELECT get_byte(o.config_fingerprint, 0) # get_byte(o.subject_key, 0) AS shard, count(*) AS n
          FROM runlimit_deleted AS o GROUP BY 1) AS d
    WHERE c.shard = d.shard;
    RETURN NULL;
END
$$;

CREATE FUNCTION {{.schema}}.runlimit_capacity_count_truncated() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM 1 FROM {{.schema}}.runlimit_capacity_shards ORDER BY shard FOR UPDATE;
    UPDATE {{.schema}}.runlimit_capacity_shards SET rows = 0 WHERE rows <> 0;
    RETURN NULL;
END
$$;

CREATE TRIGGER runlimit_capacity_truncate
    AFTER TRUNCATE ON {{.schema}}.runlimit_fixed_windows
    FOR EACH STATEMENT EXECUTE FUNCTION {{.schema}}.runlimit_capacity_count_truncated();

CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_forbid_key_update() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'runlimit: the storage key columns of runlimit_fixed_windows are immutable'
        USING ERRCODE = 'restrict_violation';
END
$$;

CREATE TRIGGER runlimit_fixed_windows_immutable_keys
    BEFORE UPDATE OF policy_id, scope_id, config_fingerprint, subject_key
    ON {{.schema}}.runlimit_fixed_windows
    FOR EACH ROW
    WHEN (OLD.policy_id IS DISTINCT FROM NEW.policy_id
       OR OLD.scope_id IS DISTINCT FROM NEW.scope_id
       OR OLD.config_fingerprint IS DISTINCT FROM NEW.config_fingerprint
       OR OLD.subject_key IS DISTINCT FROM NEW.subject_key)
    EXECUTE FUNCTION {{.schema}}.runlimit_forbid_key_update();

-- Version 4's lock functions: the six-argument one reads the old ledger
-- columns; the five-argument one forwards to it.
CREATE FUNCTION {{.schema}}.runlimit_lock_counter(
    lock_id bigint, fingerprint bytea, subject bytea, shard smallint, wait_timeout text, idle_timeout text,
    OUT used bigint, OUT started_at timestamptz, OUT expires_at timestamptz, OUT shard_rows bigint, OUT sampled_at timestamptz)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    done text;
BEGIN
    done := pg_catalog.set_config('statement_timeout', wait_timeout, true);
    done := pg_catalog.set_config('lock_timeout', wait_timeout, true);
    done := pg_catalog.set_config('idle_in_transaction_session_timeout', idle_timeout, true);
    done := pg_catalog.set_config('enable_seqscan', 'off', true);
    done := pg_catalog.pg_advisory_xact_lock(lock_id)::text;
    SELECT w.used, w.window_started_at, w.window_expires_at INTO used, started_at, expires_at
    FROM {{.schema}}.runlimit_fixed_windows AS w
    WHERE w.config_fingerprint = fingerprint AND w.subject_key = subject
    FOR UPDATE;
    IF NOT FOUND THEN
        SELECT c.rows INTO shard_rows FROM {{.schema}}.runlimit_capacity_shards AS c
        WHERE c.shard = runlimit_lock_counter.shard
        FOR UPDATE;
    END IF;
    sampled_at := pg_catalog.clock_timestamp();
END
$$;

CREATE FUNCTION {{.schema}}.runlimit_lock_counter(
    lock_id bigint, fingerprint bytea, subject bytea, shard smallint, timeout text,
    OUT used bigint, OUT started_at timestamptz, OUT expires_at timestamptz, OUT shard_rows bigint, OUT sampled_at timestamptz)
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    SELECT * FROM {{.schema}}.runlimit_lock_counter(lock_id, fingerprint, subject, shard, timeout, timeout)
$$;
