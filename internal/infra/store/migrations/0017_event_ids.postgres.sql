-- An event's own ID (evt_…), unique, so that a batch appended again after a commit whose reply was
-- lost is not logged twice.
ALTER TABLE events ADD COLUMN event_id TEXT COLLATE "C";
CREATE UNIQUE INDEX events_by_event_id ON events (event_id);
