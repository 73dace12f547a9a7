package store

import "context"

// MCPServer is an MCP server added over the API, kept so that it survives a restart.
type MCPServer struct {
	Directory string
	Name      string
	Config    []byte // the server's config as it was sent
	Created   int64
}

// PutMCPServer stores (or replaces) a server added over the API.
func (s *Queries) PutMCPServer(ctx context.Context, m MCPServer) error {
	_, err := s.exec(ctx, `INSERT INTO mcp_servers (directory, name, config, created) VALUES (?, ?, ?, ?)
		ON CONFLICT (directory, name) DO UPDATE SET config = excluded.config, created = excluded.created`,
		m.Directory, m.Name, m.Config, m.Created)
	return wrap("put mcp server", err)
}

// DeleteMCPServer forgets a server; it reports whether one was stored.
func (s *Queries) DeleteMCPServer(ctx context.Context, directory, name string) (bool, error) {
	res, err := s.exec(ctx, `DELETE FROM mcp_servers WHERE directory = ? AND name = ?`, directory, name)
	if err != nil {
		return false, wrap("delete mcp server", err)
	}
	n, err := res.RowsAffected()
	return n > 0, wrap("delete mcp server", err)
}

// MCPServers returns the servers added in a directory, oldest first.
func (s *Queries) MCPServers(ctx context.Context, directory string) ([]MCPServer, error) {
	rows, err := s.query(ctx, `SELECT directory, name, config, created FROM mcp_servers WHERE directory = ? ORDER BY created, name`, directory)
	if err != nil {
		return nil, wrap("list mcp servers", err)
	}
	defer rows.Close()
	var out []MCPServer
	for rows.Next() {
		var m MCPServer
		if err := rows.Scan(&m.Directory, &m.Name, &m.Config, &m.Created); err != nil {
			return nil, wrap("list mcp servers", err)
		}
		out = append(out, m)
	}
	return out, wrap("list mcp servers", rows.Err())
}
