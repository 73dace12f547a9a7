-- PostgreSQL: text compares byte by byte (COLLATE "C"), as SQLite does, so IDs sort alike on both.
CREATE TABLE sessions (
    id         TEXT COLLATE "C" PRIMARY KEY,
    directory  TEXT COLLATE "C" NOT NULL,
    parent_id  TEXT COLLATE "C",
    title      TEXT COLLATE "C" NOT NULL,
    created    BIGINT NOT NULL,
    updated    BIGINT NOT NULL,
    data       BYTEA NOT NULL
);
CREATE INDEX sessions_by_updated ON sessions (updated DESC, id DESC);
CREATE INDEX sessions_by_parent ON sessions (parent_id);

CREATE TABLE messages (
    id         TEXT COLLATE "C" PRIMARY KEY,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created    BIGINT NOT NULL,
    data       BYTEA NOT NULL
);
CREATE INDEX messages_by_session ON messages (session_id, created, id);

CREATE TABLE parts (
    id         TEXT COLLATE "C" PRIMARY KEY,
    message_id TEXT COLLATE "C" NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    session_id TEXT COLLATE "C" NOT NULL,
    data       BYTEA NOT NULL
);
CREATE INDEX parts_by_message ON parts (message_id, id);

CREATE TABLE todos (
    session_id TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    data       BYTEA NOT NULL
);
