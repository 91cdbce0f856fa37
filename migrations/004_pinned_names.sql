-- Name resolution that no other role can redirect. A role allowed to create
-- schemas can create one named after the service's role, which the default
-- search_path ("$user", public) searches first, and put its own tables and
-- functions there under Runlimit's names. From this step on, every function
-- of the schema runs with search_path pinned to pg_catalog and pg_temp
-- (pg_temp last: it is never searched for functions or operators) and names
-- every table in full, and the store calls runlimit_lock_counter by its full
-- name with explicitly typed arguments. The trigger functions are also
-- SECURITY DEFINER: the ledger is kept by its owner, whoever writes the
-- counters.
--
-- Unqualified names left below are PL/pgSQL variables, columns, and the
-- transition tables runlimit_inserted and runlimit_deleted, which a query of
-- the trigger finds before it searches any schema.

CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_capacity_count_inserted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
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
    FROM {{.schema}}.runlimit_capacity_shards AS c
    WHERE c.shard IN (
        SELECT get_byte(n.config_fingerprint, 0) # get_byte(n.subject_key, 0)
        FROM runlimit_inserted AS n)
    ORDER BY c.shard
    FOR UPDATE;
    GET DIAGNOSTICS wanted = ROW_COUNT;

    UPDATE {{.schema}}.runlimit_capacity_shards AS c
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

CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_capacity_count_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    wanted  bigint;
    changed bigint;
BEGIN
    PERFORM 1
    FROM {{.schema}}.runlimit_capacity_shards AS c
    WHERE c.shard IN (
        SELECT get_byte(o.config_fingerprint, 0) # get_byte(o.subject_key, 0)
        FROM runlimit_deleted AS o)
    ORDER BY c.shard
    FOR UPDATE;
    GET DIAGNOSTICS wanted = ROW_COUNT;

    UPDATE {{.schema}}.runlimit_capacity_shards AS c
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

CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_capacity_count_truncated() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM 1 FROM {{.schema}}.runlimit_capacity_shards ORDER BY shard FOR UPDATE;
    UPDATE {{.schema}}.runlimit_capacity_shards SET rows = 0 WHERE rows <> 0;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_forbid_key_update() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'runlimit: the storage key columns of runlimit_fixed_windows are immutable'
        USING ERRCODE = 'restrict_violation';
END
$$;

-- runlimit_lock_counter as 003 made it, plus a second timeout: wait_timeout
-- bounds each statement and lock wait of the transaction (the store sets it
-- from the caller's deadline), idle_timeout the gaps between the client's
-- statements (the store sets it from its own budget, so that a caller in a
-- hurry never gets the server to end the session).
CREATE FUNCTION {{.schema}}.runlimit_lock_counter(
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
    -- Bound every lock wait below, and the rest of the transaction, by the
    -- operation's budget. The ledger has a primary key index; a generic plan
    -- would otherwise scan its 256 rows.
    --
    -- Each call is an assignment rather than a PERFORM: PL/pgSQL evaluates
    -- an assignment without a query of its own, several times cheaper.
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
        SELECT c.rows INTO shard_rows
        FROM {{.schema}}.runlimit_capacity_shards AS c
        WHERE c.shard = runlimit_lock_counter.shard
        FOR UPDATE;
    END IF;

    -- The one clock sample, once every lock is held.
    sampled_at := pg_catalog.clock_timestamp();
END
$$;

-- The five-argument form stays for services still running the previous
-- release while this one rolls out.
CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_lock_counter(
    lock_id           bigint,
    fingerprint       bytea,
    subject           bytea,
    shard             smallint,
    timeout           text,
    OUT used          bigint,
    OUT started_at    timestamptz,
    OUT expires_at    timestamptz,
    OUT shard_rows    bigint,
    OUT sampled_at    timestamptz)
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    SELECT * FROM {{.schema}}.runlimit_lock_counter(
        lock_id, fingerprint, subject, shard, timeout, timeout)
$$;

---- create above / drop below ----

-- The trigger functions keep their pinned names: they behave as before. The
-- five-argument function gets a body of its own again before the one it
-- calls is dropped.
CREATE OR REPLACE FUNCTION {{.schema}}.runlimit_lock_counter(
    lock_id           bigint,
    fingerprint       bytea,
    subject           bytea,
    shard             smallint,
    timeout           text,
    OUT used          bigint,
    OUT started_at    timestamptz,
    OUT expires_at    timestamptz,
    OUT shard_rows    bigint,
    OUT sampled_at    timestamptz)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    done text;
BEGIN
    done := pg_catalog.set_config('statement_timeout', timeout, true);
    done := pg_catalog.set_config('lock_timeout', timeout, true);
    done := pg_catalog.set_config('idle_in_transaction_session_timeout', timeout, true);
    done := pg_catalog.set_config('enable_seqscan', 'off', true);
    done := pg_catalog.pg_advisory_xact_lock(lock_id)::text;

    SELECT w.used, w.window_started_at, w.window_expires_at
    INTO used, started_at, expires_at
    FROM {{.schema}}.runlimit_fixed_windows AS w
    WHERE w.config_fingerprint = fingerprint AND w.subject_key = subject
    FOR UPDATE;

    IF NOT FOUND THEN
        SELECT c.rows INTO shard_rows
        FROM {{.schema}}.runlimit_capacity_shards AS c
        WHERE c.shard = runlimit_lock_counter.shard
        FOR UPDATE;
    END IF;

    sampled_at := pg_catalog.clock_timestamp();
END
$$;

DROP FUNCTION {{.schema}}.runlimit_lock_counter(bigint, bytea, bytea, smallint, text, text);
