-- MCP servers added over the API (POST /mcp), per project directory, so that they come back after a
-- restart; config is the JSON as it was sent. DELETE /mcp/{name} removes one.
CREATE TABLE mcp_servers (
    directory TEXT COLLATE "C" NOT NULL,
    name      TEXT COLLATE "C" NOT NULL,
    config    BYTEA NOT NULL,
    created   BIGINT NOT NULL,
    PRIMARY KEY (directory, name)
);
