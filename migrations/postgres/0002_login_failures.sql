-- Failed logins per client address (the first failed-login limit): one row
-- per address, its count and the end of its window (Unix seconds). Replaced
-- by login_attempts (0003); kept while replicas of the version before it
-- may still run.
CREATE TABLE IF NOT EXISTS login_failures (
    client     TEXT   NOT NULL PRIMARY KEY,
    failures   BIGINT NOT NULL,
    window_end BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS login_failures_window_end ON login_failures (window_end);
