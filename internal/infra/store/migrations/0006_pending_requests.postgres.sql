-- Requests waiting for a person (permission approvals), kept so that a restart finds them still
-- waiting with the same IDs and can resume the turns that asked.
CREATE TABLE pending_requests (
    id         TEXT COLLATE "C" PRIMARY KEY,
    kind       TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created    BIGINT NOT NULL,
    data       BYTEA NOT NULL
);
CREATE INDEX pending_requests_by_kind ON pending_requests (kind, created, id);
