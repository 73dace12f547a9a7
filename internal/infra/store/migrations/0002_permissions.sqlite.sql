CREATE TABLE permission_grants (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    permission TEXT NOT NULL,
    pattern    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    created    INTEGER NOT NULL,
    UNIQUE (project_id, permission, pattern)
);

CREATE TABLE permission_decisions (
    request_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    directory  TEXT NOT NULL,
    permission TEXT NOT NULL,
    patterns   BLOB NOT NULL,
    reply      TEXT NOT NULL,
    message    TEXT NOT NULL,
    cause      TEXT NOT NULL,
    client     TEXT NOT NULL,
    addr       TEXT NOT NULL,
    asked      INTEGER NOT NULL,
    decided    INTEGER NOT NULL
);
CREATE INDEX permission_decisions_by_time ON permission_decisions (decided DESC);
