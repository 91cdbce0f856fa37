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
--
-- The step is one-way: its down step refuses, and a database goes back to
-- version 4 only from a backup. Reverting would restate the previous
-- release's functions and triggers here, a second copy of its admission
-- protocol.

-- Nothing reads or writes either table until this step commits: no writer
-- may slip a row in between the ledger's counts and the new triggers.
LOCK TABLE {{.schema}}.runlimit_capacity_shards, {{.schema}}.runlimit_fixed_windows IN ACCESS EXCLUSIVE MODE;

DROP TRIGGER runlimit_capacity_insert ON {{.schema}}.runlimit_fixed_windows;
DROP TRIGGER runlimit_capacity_delete ON {{.schema}}.runlimit_fixed_windows;
DROP TRIGGER runlimit_capacity_truncate ON {{.schema}}.runlimit_fixed_windows;
DROP TRIGGER runlimit_fixed_windows_immutable_keys ON {{.schema}}.runlimit_fixed_windows;
DROP FUNCTION {{.schema}}.runlimit_capacity_count_inserted();
DROP FUNCTION {{.schema}}.runlimit_capacity_count_deleted();
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

-- The ledger's trigger function, on the new columns. It locks the ledger
-- rows it changes in ascending shard order before changing them, the order
-- the store locks them in too, so two writers never wait on each other's
-- ledger rows in a cycle. The lock is FOR NO KEY UPDATE, the lock the
-- count's UPDATE takes anyway: FOR UPDATE would also wait for the FOR KEY
-- SHARE locks that the foreign key's checks of other inserts hold on the
-- same ledger row, and two inserts into one shard that both checked their
-- key before either counted would deadlock. A shard without a ledger row is
-- a foreign key violation (the foreign key reports it first; the check here
-- holds even without it); a count pushed past the hard maximum or below zero
-- fails the ledger's own CHECK, which names itself. Trigger functions run as
-- their owner, with a pinned search_path, and name the ledger in full;
-- unqualified names below are variables, columns and the transition table.
CREATE FUNCTION {{.schema}}.runlimit_capacity_count() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    step   bigint := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    locked bigint;
BEGIN
    PERFORM 1
    FROM {{.schema}}.runlimit_capacity_shards AS c
    WHERE c.capacity_shard IN (SELECT r.capacity_shard FROM runlimit_rows AS r)
    ORDER BY c.capacity_shard
    FOR NO KEY UPDATE;
    GET DIAGNOSTICS locked = ROW_COUNT;
    IF locked <> (SELECT count(DISTINCT r.capacity_shard) FROM runlimit_rows AS r) THEN
        RAISE EXCEPTION 'runlimit: the capacity ledger has no row for the shard of a counter'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'runlimit_fixed_windows_capacity_shard_fkey',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME;
    END IF;
    UPDATE {{.schema}}.runlimit_capacity_shards AS c
    SET row_count = c.row_count + step * d.n
    FROM (SELECT r.capacity_shard, count(*) AS n FROM runlimit_rows AS r GROUP BY 1) AS d
    WHERE c.capacity_shard = d.capacity_shard;
    RETURN NULL;
END
$$;

-- Both triggers name their transition table runlimit_rows: one function
-- counts inserted rows in and deleted rows out.
CREATE TRIGGER runlimit_capacity_insert
    AFTER INSERT ON {{.schema}}.runlimit_fixed_windows
    REFERENCING NEW TABLE AS runlimit_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {{.schema}}.runlimit_capacity_count();

CREATE TRIGGER runlimit_capacity_delete
    AFTER DELETE ON {{.schema}}.runlimit_fixed_windows
    REFERENCING OLD TABLE AS runlimit_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {{.schema}}.runlimit_capacity_count();

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

-- One-way: see above.
DO $$
BEGIN
    RAISE EXCEPTION 'runlimit: schema version 5 (Runlimit''s names) cannot be reverted; restore a backup taken before it to return to version 4'
        USING ERRCODE = 'feature_not_supported';
END
$$;
