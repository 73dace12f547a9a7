package app

import "sort"

// permissionNames lists the permissions a request can carry, for POST /permission/grant to refuse
// a rule that could never match (a typo such as "bsah"): every tool's name, the permissions tools
// ask under a name of their own (edit for write, multiedit and apply_patch; external_directory for
// a path outside the project), and <server>_* for each MCP server, connected or not, since its
// tools are listed only while it is connected.
func (s services) permissionNames() []string {
	seen := map[string]bool{"edit": true, "external_directory": true}
	if s.tools != nil {
		for _, t := range s.tools() {
			seen[t.Name()] = true
		}
	}
	if s.mcp != nil {
		for name := range s.mcp.Status() {
			seen[name+"_*"] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
