-- The folded file changes of a session, kept up to date at the end of each turn so that neither
-- GET /session/{id}/diff nor the session.diff event re-reads every part of the session.
CREATE TABLE session_diffs (
    session_id TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    data       BYTEA NOT NULL
);
