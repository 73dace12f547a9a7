-- The delivery log of notifications (config "notify"): one row per attempt to deliver one
-- notification of a pending request to one target, and one per notification held back because
-- the request was answered within the target's delay.
CREATE TABLE notify_deliveries (
    id              TEXT PRIMARY KEY,
    notification_id TEXT NOT NULL,
    target          TEXT NOT NULL,
    sink            TEXT NOT NULL,
    event           TEXT NOT NULL,
    kind            TEXT NOT NULL,
    request_id      TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    attempt         INTEGER NOT NULL,
    status          TEXT NOT NULL,
    code            INTEGER NOT NULL,
    detail          TEXT NOT NULL,
    time            INTEGER NOT NULL,
    duration        INTEGER NOT NULL
);
CREATE INDEX notify_deliveries_by_request ON notify_deliveries (request_id, id);
CREATE INDEX notify_deliveries_by_target ON notify_deliveries (target, id);
