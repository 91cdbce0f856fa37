\set k :client_id * 64 + random(0, 63)
\startpipeline
BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT exp.lc_min(:k::bigint, '\x5aef96240bca5582e6fd0468879a26863d81d1c1fb602def55926ef33ec8bb1f'::bytea, pg_catalog.sha256(pg_catalog.int8send(:k::bigint)), 0::smallint, '2750ms'::text, '2750ms'::text);
\endpipeline
\startpipeline
UPDATE public.runlimit_fixed_windows SET used = used + 1, window_started_at = window_started_at, window_expires_at = window_expires_at WHERE config_fingerprint = '\x5aef96240bca5582e6fd0468879a26863d81d1c1fb602def55926ef33ec8bb1f'::bytea AND subject_key = pg_catalog.sha256(pg_catalog.int8send(:k::bigint));
COMMIT;
\endpipeline
