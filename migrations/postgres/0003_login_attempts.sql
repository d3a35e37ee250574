-- Login attempts per client: each attempt is counted before its password is
-- checked, and a success clears the row, so the count is of attempts, not
-- only failures. One row per client key (an IPv4 address, an IPv6 /64, or
-- `unknown`), its count and the end of its window (Unix seconds). A row whose
-- window has ended starts over on the next attempt; the index lets ended
-- windows be deleted in small batches without a scan.
--
-- A new table rather than a renamed one: during a rolling upgrade the
-- replicas of the previous version keep counting in login_failures, the new
-- ones here. The counts of windows still running are carried over once
-- (an IPv4 client keeps its key; an IPv6 one was counted by its address and
-- is now counted by its /64, so its old count just lapses with its window).
CREATE TABLE IF NOT EXISTS login_attempts (
    client     TEXT   NOT NULL PRIMARY KEY,
    attempts   BIGINT NOT NULL,
    window_end BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS login_attempts_window_end ON login_attempts (window_end);

INSERT INTO login_attempts (client, attempts, window_end)
    SELECT client, failures, window_end FROM login_failures
    ON CONFLICT (client) DO NOTHING;
