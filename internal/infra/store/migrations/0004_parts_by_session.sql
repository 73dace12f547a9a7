-- Listing a session's messages reads all its parts at once; without this index that query scanned
-- every part of every session.
CREATE INDEX parts_by_session ON parts (session_id, message_id, id);
