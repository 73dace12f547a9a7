-- Read-only links to one session (POST /session/{id}/share). Only a hash of the link's token is
-- kept: the link itself is in the session document, which only authenticated clients read.
CREATE TABLE session_shares (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    token_hash BLOB NOT NULL UNIQUE,
    created    INTEGER NOT NULL
);
