-- MCP servers added over the API (POST /mcp), per project directory, so that they come back after a
-- restart; config is the JSON as it was sent. DELETE /mcp/{name} removes one.
CREATE TABLE mcp_servers (
    directory TEXT NOT NULL,
    name      TEXT NOT NULL,
    config    BLOB NOT NULL,
    created   INTEGER NOT NULL,
    PRIMARY KEY (directory, name)
);
