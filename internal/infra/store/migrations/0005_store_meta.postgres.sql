-- Facts about the database itself. The start-up write probe updates "opened", proving at start that
-- the file can be written.
CREATE TABLE store_meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value BIGINT NOT NULL
);
