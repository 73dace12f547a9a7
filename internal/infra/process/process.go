// Package process starts and stops the process trees tandem runs on a user's behalf: a bash tool
// command, a terminal's shell, a local MCP server. Each runs as the leader of a process group (or,
// for a terminal, a session) so that stopping it also stops whatever it started. Unix is the
// supported platform; elsewhere only the leader itself can be signalled.
package process
