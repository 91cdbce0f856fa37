-- The capacity ledger bounds the counter table: 256 shards, each counting the
-- rows whose shard (first byte of the fingerprint XOR first byte of the
-- subject key) it owns. Statement-level triggers keep the counts exact, and
-- the CHECK refuses a shard's 65,537th row whoever inserts it. The store
-- enforces its own, lower, configured bound at admission.
CREATE TABLE runlimit_capacity_shards (
    shard smallint NOT NULL,
    rows  bigint   NOT NULL,
    CONSTRAINT runlimit_capacity_shards_pkey PRIMARY KEY (shard),
    CONSTRAINT runlimit_capacity_shards_shard_check CHECK (shard BETWEEN 0 AND 255),
    CONSTRAINT runlimit_capacity_shards_rows_check CHECK (rows BETWEEN 0 AND 65536)
);

-- No writer may slip a row in between counting the existing rows and
-- installing the triggers below.
LOCK TABLE runlimit_fixed_windows IN SHARE ROW EXCLUSIVE MODE;

-- Rows stored before this step met only the table's CHECK: hold them to the
-- storage key rules that the insert trigger below keeps from now on.
DO $$
BEGIN
    IF EXISTS (
        SELECT FROM runlimit_fixed_windows AS w
        WHERE octet_length(w.policy_id) NOT BETWEEN 1 AND 128
           OR octet_length(w.scope_id) NOT BETWEEN 1 AND 128
           OR octet_length(w.config_fingerprint) <> 32
           OR octet_length(w.subject_key) <> 32) THEN
        RAISE EXCEPTION 'runlimit: runlimit_fixed_windows holds rows with an invalid storage key'
            USING ERRCODE = 'check_violation';
    END IF;
END
$$;

INSERT INTO runlimit_capacity_shards (shard, rows)
SELECT s.shard, count(w.config_fingerprint)
FROM pg_catalog.generate_series(0, 255) AS s(shard)
LEFT JOIN runlimit_fixed_windows AS w
    ON (pg_catalog.get_byte(w.config_fingerprint, 0) # pg_catalog.get_byte(w.subject_key, 0)) = s.shard
GROUP BY s.shard;

-- Every ledger function locks the ledger rows it changes in ascending shard
-- order before changing them, the order the store uses too, so two writers
-- can never wait on each other's ledger rows in a cycle. Each checks that
-- every shard it counted exists, so a damaged ledger fails loudly.
--
-- The insert trigger also holds the rules of the storage key columns, which
-- the table checks only here because they never change after an insert:
-- a CHECK would cost every update of a counter.
CREATE FUNCTION runlimit_capacity_count_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    wanted  bigint;
    changed bigint;
BEGIN
    IF EXISTS (
        SELECT FROM runlimit_inserted AS n
        WHERE octet_length(n.policy_id) NOT BETWEEN 1 AND 128
           OR octet_length(n.scope_id) NOT BETWEEN 1 AND 128
           OR octet_length(n.config_fingerprint) <> 32
           OR octet_length(n.subject_key) <> 32) THEN
        RAISE EXCEPTION 'runlimit: new row of runlimit_fixed_windows has an invalid storage key'
            USING ERRCODE = 'check_violation',
                  DETAIL = 'policy_id and scope_id take 1 to 128 bytes, config_fingerprint and subject_key 32 bytes.';
    END IF;

    PERFORM 1
    FROM runlimit_capacity_shards AS c
    WHERE c.shard IN (
        SELECT get_byte(n.config_fingerprint, 0) # get_byte(n.subject_key, 0)
        FROM runlimit_inserted AS n)
    ORDER BY c.shard
    FOR UPDATE;
    GET DIAGNOSTICS wanted = ROW_COUNT;

    UPDATE runlimit_capacity_shards AS c
    SET rows = c.rows + d.n
    FROM (
        SELECT get_byte(n.config_fingerprint, 0) # get_byte(n.subject_key, 0) AS shard,
               count(*) AS n
        FROM runlimit_inserted AS n
        GROUP BY 1) AS d
    WHERE c.shard = d.shard;
    GET DIAGNOSTICS changed = ROW_COUNT;

    IF changed <> wanted OR changed <> (
        SELECT count(DISTINCT get_byte(n.config_fingerprint, 0) # get_byte(n.subject_key, 0))
        FROM runlimit_inserted AS n) THEN
        RAISE EXCEPTION 'runlimit: capacity ledger is missing shards'
            USING ERRCODE = 'data_corrupted';
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION runlimit_capacity_count_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    wanted  bigint;
    changed bigint;
BEGIN
    PERFORM 1
    FROM runlimit_capacity_shards AS c
    WHERE c.shard IN (
        SELECT get_byte(o.config_fingerprint, 0) # get_byte(o.subject_key, 0)
        FROM runlimit_deleted AS o)
    ORDER BY c.shard
    FOR UPDATE;
    GET DIAGNOSTICS wanted = ROW_COUNT;

    UPDATE runlimit_capacity_shards AS c
    SET rows = c.rows - d.n
    FROM (
        SELECT get_byte(o.config_fingerprint, 0) # get_byte(o.subject_key, 0) AS shard,
               count(*) AS n
        FROM runlimit_deleted AS o
        GROUP BY 1) AS d
    WHERE c.shard = d.shard;
    GET DIAGNOSTICS changed = ROW_COUNT;

    IF changed <> wanted OR changed <> (
        SELECT count(DISTINCT get_byte(o.config_fingerprint, 0) # get_byte(o.subject_key, 0))
        FROM runlimit_deleted AS o) THEN
        RAISE EXCEPTION 'runlimit: capacity ledger is missing shards'
            USING ERRCODE = 'data_corrupted';
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION runlimit_capacity_count_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM runlimit_capacity_shards ORDER BY shard FOR UPDATE;
    UPDATE runlimit_capacity_shards SET rows = 0 WHERE rows <> 0;
    RETURN NULL;
END
$$;

-- A row's shard derives from its keys, so changing a key would move the row
-- to another shard behind the ledger's back. Keys are immutable; a counter
-- under a new key is a new row.
CREATE FUNCTION runlimit_forbid_key_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'runlimit: the storage key columns of runlimit_fixed_windows are immutable'
        USING ERRCODE = 'restrict_violation';
END
$$;

-- Trigger functions resolve names through a fixed path, pg_catalog first and
-- then the schema holding these tables, whatever search_path the session
-- that fires them has.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'runlimit_capacity_count_inserted',
        'runlimit_capacity_count_deleted',
        'runlimit_capacity_count_truncated',
        'runlimit_forbid_key_update']
    LOOP
        EXECUTE pg_catalog.format('ALTER FUNCTION %I.%I() SET search_path = pg_catalog, %I',
            pg_catalog.current_schema(), f, pg_catalog.current_schema());
    END LOOP;
END
$$;

CREATE TRIGGER runlimit_capacity_insert
    AFTER INSERT ON runlimit_fixed_windows
    REFERENCING NEW TABLE AS runlimit_inserted
    FOR EACH STATEMENT EXECUTE FUNCTION runlimit_capacity_count_inserted();

CREATE TRIGGER runlimit_capacity_delete
    AFTER DELETE ON runlimit_fixed_windows
    REFERENCING OLD TABLE AS runlimit_deleted
    FOR EACH STATEMENT EXECUTE FUNCTION runlimit_capacity_count_deleted();

CREATE TRIGGER runlimit_capacity_truncate
    AFTER TRUNCATE ON runlimit_fixed_windows
    FOR EACH STATEMENT EXECUTE FUNCTION runlimit_capacity_count_truncated();

CREATE TRIGGER runlimit_fixed_windows_immutable_keys
    BEFORE UPDATE OF policy_id, scope_id, config_fingerprint, subject_key
    ON runlimit_fixed_windows
    FOR EACH ROW
    WHEN (OLD.policy_id IS DISTINCT FROM NEW.policy_id
       OR OLD.scope_id IS DISTINCT FROM NEW.scope_id
       OR OLD.config_fingerprint IS DISTINCT FROM NEW.config_fingerprint
       OR OLD.subject_key IS DISTINCT FROM NEW.subject_key)
    EXECUTE FUNCTION runlimit_forbid_key_update();

---- create above / drop below ----

DROP TRIGGER runlimit_fixed_windows_immutable_keys ON runlimit_fixed_windows;
DROP TRIGGER runlimit_capacity_truncate ON runlimit_fixed_windows;
DROP TRIGGER runlimit_capacity_delete ON runlimit_fixed_windows;
DROP TRIGGER runlimit_capacity_insert ON runlimit_fixed_windows;
DROP FUNCTION runlimit_forbid_key_update();
DROP FUNCTION runlimit_capacity_count_truncated();
DROP FUNCTION runlimit_capacity_count_deleted();
DROP FUNCTION runlimit_capacity_count_inserted();
DROP TABLE runlimit_capacity_shards;
