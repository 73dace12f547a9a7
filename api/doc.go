// Package api holds tandem's wire types: the JSON documents its HTTP API sends and accepts
// (sessions, messages, parts, prompts, permission and question requests, MCP elicitations, provider
// listings) and the catalogue of the events its /event stream carries, each name with its payload.
//
// It exists so that everything that speaks the API shares one definition of it: the domain
// packages that produce the documents (they name these types with aliases), the routes and the SSE
// writer that send them, and the readers at the other end — package client, the TUI, the ACP
// bridge, notifications. A change of shape here is a change for every client at once, so the JSON
// these types make must stay what OpenCode's clients expect.
//
// The rule: api imports nothing of tandem, only the standard library. A program that talks to a
// tandem server through package client builds this package and nothing of the server (a test in
// test/architecture keeps it so). Validation, storage and behaviour belong to the domain packages;
// here are only shapes, and the few methods that make their JSON.
package api
