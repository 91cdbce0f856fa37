-- The capacity ledger as a Rust Runlimit service creates it, from SPEC's
-- facts. Unlike this repository's migrations, the trigger functions find
-- the ledger at run time, in the schema of the table that fired them
-- (TG_TABLE_SCHEMA), through dynamic SQL.
CREATE TABLE runlimit_capacity_shards (
    capacity_shard smallint PRIMARY KEY,
    row_count bigint NOT NULL,
    CONSTRAINT runlimit_capacity_shards_valid_shard CHECK (capacity_shard >= 0 AND capacity_shard <= 255),
    CONSTRAINT runlimit_capacity_shards_nonnegative_count CHECK (row_count >= 0),
    CONSTRAINT runlimit_capacity_shards_hard_max CHECK (row_count <= 65536)
);

ALTER TABLE runlimit_fixed_windows
    ADD COLUMN capacity_shard smallint NOT NULL
        GENERATED ALWAYS AS (((get_byte(config_fingerprint, 0) # get_byte(subject_key, 0)))::smallint) STORED;

INSERT INTO runlimit_capacity_shards (capacity_shard, row_count)
SELECT s.n, (SELECT count(*) FROM runlimit_fixed_windows AS w WHERE w.capacity_shard = s.n)
FROM generate_series(0, 255) AS s(n);

ALTER TABLE runlimit_fixed_windows
    ADD CONSTRAINT runlimit_fixed_windows_capacity_shard_fkey
        FOREIGN KEY (capacity_shard) REFERENCES runlimit_capacity_shards (capacity_shard);

CREATE FUNCTION runlimit_ledger_adjust() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $body$
DECLARE
    wanted smallint[];
    held smallint[];
BEGIN
    SELECT array_agg(DISTINCT r.capacity_shard ORDER BY r.capacity_shard) INTO wanted FROM changed_rows AS r;
    EXECUTE format(
        'SELECT array_agg(l.capacity_shard ORDER BY l.capacity_shard) FROM (
             SELECT capacity_shard FROM %I.runlimit_capacity_shards
             WHERE capacity_shard = ANY ($1) ORDER BY capacity_shard FOR UPDATE) AS l',
        TG_TABLE_SCHEMA) INTO held USING wanted;
    IF held IS DISTINCT FROM wanted THEN
        RAISE EXCEPTION 'capacity ledger row missing' USING ERRCODE = 'foreign_key_violation';
    END IF;
    EXECUTE format(
        'UPDATE %I.runlimit_capacity_shards AS c SET row_count = c.row_count %s d.n
         FROM (SELECT capacity_shard, count(*) AS n FROM changed_rows GROUP BY capacity_shard) AS d
         WHERE c.capacity_shard = d.capacity_shard',
        TG_TABLE_SCHEMA, CASE TG_OP WHEN 'INSERT' THEN '+' ELSE '-' END);
    RETURN NULL;
END
$body$;

CREATE FUNCTION runlimit_reject_storage_key_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $body$
BEGIN
    IF NEW.config_fingerprint IS DISTINCT FROM OLD.config_fingerprint
       OR NEW.subject_key IS DISTINCT FROM OLD.subject_key THEN
        RAISE EXCEPTION 'storage key is immutable'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'runlimit_fixed_windows_immutable_storage_key';
    END IF;
    RETURN NEW;
END
$body$;

CREATE TRIGGER runlimit_ledger_insert AFTER INSERT ON runlimit_fixed_windows
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION runlimit_ledger_adjust();
CREATE TRIGGER runlimit_ledger_delete AFTER DELETE ON runlimit_fixed_windows
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION runlimit_ledger_adjust();
CREATE TRIGGER runlimit_storage_key_immutable BEFORE UPDATE ON runlimit_fixed_windows
    FOR EACH ROW EXECUTE FUNCTION runlimit_reject_storage_key_change();
