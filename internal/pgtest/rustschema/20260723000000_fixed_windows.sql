-- Runlimit's counter table as a Rust Runlimit service creates it, written
-- from the facts of SPEC section 5 ("Schema names"), not from any Rust
-- source. sqlx runs it with the service's search_path, so every name is
-- unqualified and lands in the first schema of that path.
CREATE TABLE runlimit_fixed_windows (
    policy_id text NOT NULL,
    scope_id text NOT NULL,
    config_fingerprint bytea NOT NULL,
    subject_key bytea NOT NULL,
    window_started_at timestamptz NOT NULL,
    window_expires_at timestamptz NOT NULL,
    used bigint NOT NULL,
    PRIMARY KEY (config_fingerprint, subject_key),
    CONSTRAINT runlimit_fixed_windows_policy_id_size
        CHECK (octet_length(policy_id) >= 1 AND octet_length(policy_id) <= 128),
    CONSTRAINT runlimit_fixed_windows_scope_id_size
        CHECK (octet_length(scope_id) >= 1 AND octet_length(scope_id) <= 128),
    CONSTRAINT runlimit_fixed_windows_fingerprint_size CHECK (octet_length(config_fingerprint) = 32),
    CONSTRAINT runlimit_fixed_windows_subject_key_size CHECK (octet_length(subject_key) = 32),
    CONSTRAINT runlimit_fixed_windows_valid_window CHECK (window_expires_at > window_started_at),
    CONSTRAINT runlimit_fixed_windows_positive_usage CHECK (used > 0)
);

CREATE INDEX runlimit_fixed_windows_expiry_idx ON runlimit_fixed_windows (window_expires_at);
