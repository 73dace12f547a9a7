CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    directory  TEXT NOT NULL,
    parent_id  TEXT,
    title      TEXT NOT NULL,
    created    INTEGER NOT NULL,
    updated    INTEGER NOT NULL,
    data       BLOB NOT NULL
);
CREATE INDEX sessions_by_updated ON sessions (updated DESC, id DESC);
CREATE INDEX sessions_by_parent ON sessions (parent_id);

CREATE TABLE messages (
    id         TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created    INTEGER NOT NULL,
    data       BLOB NOT NULL
);
CREATE INDEX messages_by_session ON messages (session_id, created, id);

CREATE TABLE parts (
    id         TEXT PRIMARY KEY,
    message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    data       BLOB NOT NULL
);
CREATE INDEX parts_by_message ON parts (message_id, id);

CREATE TABLE todos (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    data       BLOB NOT NULL
);
