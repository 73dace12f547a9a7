-- The delivery log of notifications (config "notify"): one row per attempt to deliver one
-- notification of a pending request to one target, and one per notification held back because
-- the request was answered within the target's delay.
CREATE TABLE notify_deliveries (
    id              TEXT COLLATE "C" PRIMARY KEY,
    notification_id TEXT COLLATE "C" NOT NULL,
    target          TEXT COLLATE "C" NOT NULL,
    sink            TEXT COLLATE "C" NOT NULL,
    event           TEXT COLLATE "C" NOT NULL,
    kind            TEXT COLLATE "C" NOT NULL,
    request_id      TEXT COLLATE "C" NOT NULL,
    session_id      TEXT COLLATE "C" NOT NULL,
    attempt         BIGINT NOT NULL,
    status          TEXT COLLATE "C" NOT NULL,
    code            BIGINT NOT NULL,
    detail          TEXT COLLATE "C" NOT NULL,
    time            BIGINT NOT NULL,
    duration        BIGINT NOT NULL
);
CREATE INDEX notify_deliveries_by_request ON notify_deliveries (request_id, id);
CREATE INDEX notify_deliveries_by_target ON notify_deliveries (target, id);
