CREATE TABLE permission_grants (
    id         TEXT COLLATE "C" PRIMARY KEY,
    project_id TEXT COLLATE "C" NOT NULL,
    permission TEXT COLLATE "C" NOT NULL,
    pattern    TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C" NOT NULL,
    request_id TEXT COLLATE "C" NOT NULL,
    created    BIGINT NOT NULL,
    UNIQUE (project_id, permission, pattern)
);

CREATE TABLE permission_decisions (
    request_id TEXT COLLATE "C" PRIMARY KEY,
    session_id TEXT COLLATE "C" NOT NULL,
    directory  TEXT COLLATE "C" NOT NULL,
    permission TEXT COLLATE "C" NOT NULL,
    patterns   BYTEA NOT NULL,
    reply      TEXT COLLATE "C" NOT NULL,
    message    TEXT COLLATE "C" NOT NULL,
    cause      TEXT COLLATE "C" NOT NULL,
    client     TEXT COLLATE "C" NOT NULL,
    addr       TEXT COLLATE "C" NOT NULL,
    asked      BIGINT NOT NULL,
    decided    BIGINT NOT NULL
);
CREATE INDEX permission_decisions_by_time ON permission_decisions (decided DESC);
