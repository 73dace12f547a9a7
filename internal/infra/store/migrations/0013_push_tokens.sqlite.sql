-- The single-use tokens of Web Push notification buttons (Approve, Reject), so that a button still
-- works after a restart, like the request it answers. Only the token's SHA-256 is kept: the
-- database never holds a token that could be replayed. Redeeming one deletes every token of its
-- request; expired rows are pruned as new tokens are issued.
CREATE TABLE push_tokens (
    hash       BLOB PRIMARY KEY,
    request_id TEXT NOT NULL,
    decision   TEXT NOT NULL,
    expires    INTEGER NOT NULL
);
CREATE INDEX push_tokens_by_request ON push_tokens (request_id);
CREATE INDEX push_tokens_by_expiry ON push_tokens (expires);
