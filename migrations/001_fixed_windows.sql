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
    CONSTRAINT runlimit_fixed_windows_policy_id_check
        CHECK (octet_length(policy_id) BETWEEN 1 AND 128),
    CONSTRAINT runlimit_fixed_windows_scope_id_check
        CHECK (octet_length(scope_id) BETWEEN 1 AND 128),
    CONSTRAINT runlimit_fixed_windows_config_fingerprint_check
        CHECK (octet_length(config_fingerprint) = 32),
    CONSTRAINT runlimit_fixed_windows_subject_key_check
        CHECK (octet_length(subject_key) = 32),
    CONSTRAINT runlimit_fixed_windows_window_check
        CHECK (isfinite(window_started_at) AND isfinite(window_expires_at)
               AND window_expires_at > window_started_at),
    CONSTRAINT runlimit_fixed_windows_used_check CHECK (used > 0)
) WITH (fillfactor = 80);

-- Cleanup walks expired rows oldest first through this index.
CREATE INDEX runlimit_fixed_windows_expires_idx
    ON runlimit_fixed_windows (window_expires_at);

---- create above / drop below ----

DROP TABLE runlimit_fixed_windows;
