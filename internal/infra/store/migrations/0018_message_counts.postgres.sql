-- Each session counts its messages, so that a reader that kept the messages before a position can
-- check that none was inserted among them by counting only the ones after it.
ALTER TABLE sessions ADD COLUMN message_count BIGINT NOT NULL DEFAULT 0;
UPDATE sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE messages.session_id = sessions.id);
CREATE FUNCTION count_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE sessions SET message_count = message_count + 1 WHERE id = NEW.session_id;
    ELSE
        UPDATE sessions SET message_count = message_count - 1 WHERE id = OLD.session_id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_counted AFTER INSERT OR DELETE ON messages
    FOR EACH ROW EXECUTE FUNCTION count_messages();
