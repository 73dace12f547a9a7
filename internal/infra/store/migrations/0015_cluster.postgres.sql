-- Several tandem nodes on one PostgreSQL database (SQLite has one node and none of this).

-- The database's identity, made once: event cursors carry it, so a cursor from another database is
-- never read as one of this log.
CREATE TABLE cluster_meta (
    one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    id  TEXT COLLATE "C" NOT NULL
);
INSERT INTO cluster_meta (id) VALUES (replace(gen_random_uuid()::text, '-', ''));

-- The nodes sharing the database; heartbeat is by the database's clock.
CREATE TABLE nodes (
    id        TEXT COLLATE "C" PRIMARY KEY,
    url       TEXT COLLATE "C" NOT NULL,
    started   TIMESTAMPTZ NOT NULL,
    heartbeat TIMESTAMPTZ NOT NULL
);

-- Which node runs a session; epoch grows by one each time the session changes hands, and fences
-- writes made under an older one.
CREATE TABLE session_owners (
    session_id TEXT COLLATE "C" PRIMARY KEY,
    node       TEXT COLLATE "C" NOT NULL,
    epoch      BIGINT NOT NULL
);
CREATE INDEX session_owners_by_node ON session_owners (node);

-- The event log every node tails, in one order. seq comes from event_counter, whose row lock makes
-- appends commit in seq order: a reader never sees a seq before every smaller one.
CREATE TABLE events (
    seq       BIGINT PRIMARY KEY,
    node      TEXT COLLATE "C" NOT NULL,
    directory TEXT COLLATE "C" NOT NULL,
    type      TEXT COLLATE "C" NOT NULL,
    payload   BYTEA NOT NULL,
    created   TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE event_counter (
    one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    seq BIGINT NOT NULL
);
INSERT INTO event_counter (seq) VALUES (0);
