-- Each session counts its messages, so that a reader that kept the messages before a position can
-- check that none was inserted among them by counting only the ones after it.
ALTER TABLE sessions ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE messages.session_id = sessions.id);
CREATE TRIGGER messages_counted_in AFTER INSERT ON messages
BEGIN
    UPDATE sessions SET message_count = message_count + 1 WHERE id = NEW.session_id;
END;
CREATE TRIGGER messages_counted_out AFTER DELETE ON messages
BEGIN
    UPDATE sessions SET message_count = message_count - 1 WHERE id = OLD.session_id;
END;
