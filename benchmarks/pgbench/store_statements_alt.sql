\set k :client_id * 64 + random(0, 63)
\startpipeline
BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT pg_catalog.set_config('statement_timeout', '2750ms'::text, true) IS NOT NULL AND pg_catalog.set_config('lock_timeout', '2750ms'::text, true) IS NOT NULL AND pg_catalog.set_config('idle_in_transaction_session_timeout', '2750ms'::text, true) IS NOT NULL AND pg_catalog.set_config('enable_seqscan', 'off', true) IS NOT NULL AND pg_catalog.pg_advisory_xact_lock(:k::bigint)::text IS NOT NULL;
SELECT l.used, l.window_started_at, l.window_expires_at, CASE WHEN l.used IS NULL THEN (SELECT c.row_count FROM public.runlimit_capacity_shards AS c WHERE c.capacity_shard = 0::smallint FOR UPDATE) END, pg_catalog.clock_timestamp() FROM (SELECT) AS one LEFT JOIN (SELECT w.used, w.window_started_at, w.window_expires_at FROM public.runlimit_fixed_windows AS w WHERE w.config_fingerprint = '\x5aef96240bca5582e6fd0468879a26863d81d1c1fb602def55926ef33ec8bb1f'::bytea AND w.subject_key = pg_catalog.sha256(pg_catalog.int8send(:k::bigint)) FOR UPDATE) AS l ON true;
\endpipeline
\startpipeline
UPDATE public.runlimit_fixed_windows SET used = used + 1, window_started_at = window_started_at, window_expires_at = window_expires_at WHERE config_fingerprint = '\x5aef96240bca5582e6fd0468879a26863d81d1c1fb602def55926ef33ec8bb1f'::bytea AND subject_key = pg_catalog.sha256(pg_catalog.int8send(:k::bigint));
COMMIT;
\endpipeline
