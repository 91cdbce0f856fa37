-- Runlimit fixed-window counters: one row per policy fingerprint and subject
-- key. The layout is shared with Runlimit for Rust, so services in both
-- languages can share one database.
--
-- Fillfactor 80 leaves room on each page so that counting an active window
-- (only `used` changes) can stay a heap-only tuple update.
CREATE TABLE runlimit_fixed_windows (
    policy_id          text        NOT NULL,
    scope_id           text        NOT NULL,
    config_fingerprint bytea       NOT NULL,
    subject_key        bytea       NOT NULL,
    window_started_at  timestamptz NOT NULL,
    window_expires_at  timestamptz NOT NULL,
    used               bigint      NOT NULL,
    CONSTRAINT runlimit_fixed_windows_pkey PRIMARY KEY (config_fingerprint, subject_key),
    -- PostgreSQL rebuilds every CHECK expression of a table from its stored
    -- form on each INSERT and UPDATE, which showed in an admission's time:
    -- the table has one CHECK, for the columns an admission changes. The
    -- storage key columns never change once inserted (002 makes them
    -- immutable), so their rules (ids of 1 to 128 bytes, 32-byte
    -- fingerprint and subject key) are checked once, on insert, by the
    -- statement trigger that counts new rows in 002.
    CONSTRAINT runlimit_fixed_windows_window_check CHECK (
        isfinite(window_started_at) AND isfinite(window_expires_at)
        AND window_expires_at > window_started_at
        AND used > 0)
) WITH (fillfactor = 80);

-- Cleanup walks expired rows oldest first through this index.
CREATE INDEX runlimit_fixed_windows_expires_idx
    ON runlimit_fixed_windows (window_expires_at);

---- create above / drop below ----

DROP TABLE runlimit_fixed_windows;
