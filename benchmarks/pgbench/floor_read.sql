\set k :client_id * 64 + random(0, 63)
\startpipeline
BEGIN;
SELECT l.used, l.window_started_at, l.window_expires_at, g.row_count, pg_catalog.clock_timestamp() FROM (SELECT) AS one LEFT JOIN (SELECT w.used, w.window_started_at, w.window_expires_at FROM public.runlimit_fixed_windows AS w WHERE w.config_fingerprint = '\x5aef96240bca5582e6fd0468879a26863d81d1c1fb602def55926ef33ec8bb1f'::bytea AND w.subject_key = pg_catalog.sha256(pg_catalog.int8send(:k::bigint)) FOR UPDATE) AS l ON true LEFT JOIN LATERAL (SELECT c.row_count FROM public.runlimit_capacity_shards AS c WHERE c.capacity_shard = 0::smallint AND l.used IS NULL FOR UPDATE) AS g ON true;
\endpipeline
\startpipeline
UPDATE public.runlimit_fixed_windows SET used = used + 1, window_started_at = window_started_at, window_expires_at = window_expires_at WHERE config_fingerprint = '\x5aef96240bca5582e6fd0468879a26863d81d1c1fb602def55926ef33ec8bb1f'::bytea AND subject_key = pg_catalog.sha256(pg_catalog.int8send(:k::bigint));
COMMIT;
\endpipeline
