-- What this library adds to Runlimit's schema: the objects a Rust Runlimit
-- service does not create. A database such a service migrated is adopted at
-- version 5 and takes this step too, so both paths end with the same objects
-- of this library's (see the package documentation).
--
-- runlimit_lock_counter is round trip 1 of a single-check admission in one
-- statement: the transaction's settings, the advisory lock, the row lock,
-- the ledger lock of a new key and the clock sample, in the protocol's
-- order. The store calls it right after BEGIN and evaluates what it returns.
--
-- Why a function: the lock order needs separate statements. The row lock
-- must read with a snapshot taken after the advisory lock is granted, or it
-- would miss a row that the previous holder of the lock inserted, and the
-- clock must be read after every lock. One client statement has a single
-- snapshot and no guaranteed order of evaluation; a VOLATILE PL/pgSQL
-- function runs its statements in order and takes a fresh snapshot for each
-- one (read committed), at a fraction of the cost of a statement sent by the
-- client.
--
-- wait_timeout bounds each statement and lock wait of the transaction (the
-- store sets it from the caller's deadline), idle_timeout the gaps between
-- the client's statements (set from the store's own budget, so that a caller
-- in a hurry never gets the server to end the session). The signature is the
-- previous release's, so that its replicas keep admitting single checks
-- while this one rolls out.
CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_lock_counter(
    lock_id           bigint,
    fingerprint       bytea,
    subject           bytea,
    shard             smallint,
    wait_timeout      text,
    idle_timeout      text,
    OUT used          bigint,
    OUT started_at    timestamptz,
    OUT expires_at    timestamptz,
    OUT shard_rows    bigint,
    OUT sampled_at    timestamptz)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    done text;
BEGIN
    -- Bound every lock wait below, and the rest of the transaction. The
    -- ledger has a primary key index; a generic plan would otherwise scan
    -- its 256 rows. Each call is an assignment rather than a PERFORM:
    -- PL/pgSQL evaluates an assignment without a query of its own.
    done := pg_catalog.set_config('statement_timeout', wait_timeout, true);
    done := pg_catalog.set_config('lock_timeout', wait_timeout, true);
    done := pg_catalog.set_config('idle_in_transaction_session_timeout', idle_timeout, true);
    done := pg_catalog.set_config('enable_seqscan', 'off', true);

    -- Serialises every admission of the key, including those that find it
    -- absent and would create it.
    done := pg_catalog.pg_advisory_xact_lock(lock_id)::text;

    -- A fresh snapshot: sees what the previous holder of the lock committed.
    SELECT w.used, w.window_started_at, w.window_expires_at
    INTO used, started_at, expires_at
    FROM {{.schema}}.runlimit_fixed_windows AS w
    WHERE w.config_fingerprint = fingerprint AND w.subject_key = subject
    FOR UPDATE;

    -- Only a key without a row needs a slot; a renewal must not queue on a
    -- ledger row shared with thousands of other counters. No row here means
    -- a damaged ledger, which the caller reports.
    IF NOT FOUND THEN
        SELECT c.row_count INTO shard_rows
        FROM {{.schema}}.runlimit_capacity_shards AS c
        WHERE c.capacity_shard = runlimit_lock_counter.shard
        FOR UPDATE;
    END IF;

    -- The one clock sample, once every lock is held.
    sampled_at := pg_catalog.clock_timestamp();
END
$$;

-- TRUNCATE empties every shard: the ledger follows.
CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_capacity_count_truncated() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM 1 FROM {{.schema}}.runlimit_capacity_shards AS c ORDER BY c.capacity_shard FOR UPDATE;
    UPDATE {{.schema}}.runlimit_capacity_shards SET row_count = 0 WHERE row_count <> 0;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER runlimit_capacity_truncate
    AFTER TRUNCATE ON {{.schema}}.runlimit_fixed_windows
    FOR EACH STATEMENT EXECUTE FUNCTION {{.schema}}.runlimit_capacity_count_truncated();

---- create above / drop below ----

DROP TRIGGER runlimit_capacity_truncate ON {{.schema}}.runlimit_fixed_windows;
DROP FUNCTION {{.schema}}.runlimit_capacity_count_truncated();
DROP FUNCTION {{.schema}}.runlimit_lock_counter(bigint, bytea, bytea, smallint, text, text);
