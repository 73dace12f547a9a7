-- Secrets every node must share, made by whichever node needs one first: the key that signs
-- browser sessions, so that a browser signed in at one node is signed in at all of them.
CREATE TABLE cluster_secrets (
    name  TEXT COLLATE "C" PRIMARY KEY,
    value BYTEA NOT NULL
);
