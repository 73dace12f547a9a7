-- An answer recorded for a waiting request before the node that asked applies it (several nodes
-- on one database: the first claim on any node wins).
ALTER TABLE pending_requests ADD COLUMN state TEXT COLLATE "C" NOT NULL DEFAULT 'pending';
ALTER TABLE pending_requests ADD COLUMN reply BYTEA;
ALTER TABLE pending_requests ADD COLUMN answered_by TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE pending_requests ADD COLUMN answered_at BIGINT NOT NULL DEFAULT 0;
