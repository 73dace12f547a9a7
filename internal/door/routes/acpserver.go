package routes

import (
	"net/http"
)

// ACPServerPath is where tandem serves the Agent Client Protocol over Streamable HTTP.
const ACPServerPath = "/acp"

// ACPServer serves tandem as an ACP agent over Streamable HTTP behind the same auth and Origin
// rules as every other route, so a remote editor can drive a tandem on another machine.
type ACPServer struct {
	Handler http.Handler // acphttp's handler; nil only when building the document
}

// Ops declares the Streamable HTTP endpoint: POST for messages (initialize opens a connection),
// GET for the connection's or a session's stream, DELETE to end the connection.
func (a *ACPServer) Ops() []Op {
	serve := func(w http.ResponseWriter, r *http.Request) {
		if a.Handler == nil {
			writeError(w, r, notFound("ACP server not running"))
			return
		}
		// Every ACP message is a JSON-RPC body: a form or text/plain POST, which a page on another
		// site may send without asking, is refused as on every other route that changes something.
		if r.Method == http.MethodPost {
			if err := checkContentType(r, true); err != nil {
				writeError(w, r, err)
				return
			}
		}
		a.Handler.ServeHTTP(w, r)
	}
	const about = "tandem as an Agent Client Protocol agent (protocol 1) over Streamable HTTP: POST initialize answers with " +
		"an Acp-Connection-Id header; later messages carry it (and Acp-Session-Id for a session's messages) and are answered " +
		"202; GET with Accept: text/event-stream opens the connection's stream, or with Acp-Session-Id that session's " +
		"(session/update notifications, session/request_permission, responses); DELETE ends the connection."
	return []Op{
		raw(http.MethodPost, ACPServerPath, "acpServer.post", "Send ACP messages", nil, nil, "application/json", serve).doc(about, 415),
		raw(http.MethodGet, ACPServerPath, "acpServer.stream", "Open an ACP stream", nil, nil, "text/event-stream", serve).doc(about),
		raw(http.MethodDelete, ACPServerPath, "acpServer.end", "End an ACP connection", nil, nil, "application/json", serve).doc(about),
	}
}
