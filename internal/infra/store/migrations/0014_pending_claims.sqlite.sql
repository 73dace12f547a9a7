-- An answer recorded for a waiting request before the node that asked applies it (several nodes
-- on one database: the first claim on any node wins).
ALTER TABLE pending_requests ADD COLUMN state TEXT NOT NULL DEFAULT 'pending';
ALTER TABLE pending_requests ADD COLUMN reply BLOB;
ALTER TABLE pending_requests ADD COLUMN answered_by TEXT NOT NULL DEFAULT '';
ALTER TABLE pending_requests ADD COLUMN answered_at INTEGER NOT NULL DEFAULT 0;
