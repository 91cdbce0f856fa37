-- Run on a database that `runlimit migrate` brought to version 6 in schema
-- public. 4,096 stored counters (pgbench's clients use keys
-- client_id * 64 + 0..63), and, in schema exp, the lock function without
-- its settings and advisory lock, for the decomposition.
INSERT INTO public.runlimit_fixed_windows (policy_id, scope_id, config_fingerprint, subject_key, window_started_at, window_expires_at, used)
SELECT 'p', 's', sha256('fp'::bytea), sha256(int8send(k)), now(), now() + interval '1 day', 1 FROM generate_series(0, 4095) k
ON CONFLICT DO NOTHING;
CREATE SCHEMA IF NOT EXISTS exp;
-- Pinned like runlimit_lock_counter; only the row lock and the clock.
CREATE OR REPLACE FUNCTION exp.lc_min(lock_id bigint, fingerprint bytea, subject bytea, shard smallint, wait_timeout text, idle_timeout text,
  OUT used bigint, OUT started_at timestamptz, OUT expires_at timestamptz, OUT shard_rows bigint, OUT sampled_at timestamptz)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    SELECT w.used, w.window_started_at, w.window_expires_at INTO used, started_at, expires_at
    FROM public.runlimit_fixed_windows AS w WHERE w.config_fingerprint = fingerprint AND w.subject_key = subject FOR UPDATE;
    sampled_at := pg_catalog.clock_timestamp();
END $$;
