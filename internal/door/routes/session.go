package routes

import (
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

// Sessions serves sessions and their messages.
type Sessions struct {
	Service *session.Service
	// lastLink is the Link header of the last page that had a next one: a client polling the same
	// list asks with the same query and gets the same cursor, and building the link again costs
	// a sixth of the handler's time.
	lastLink atomic.Pointer[nextLink]
}

// nextLink is a Link header and what it was built from.
type nextLink struct {
	path, query, cursor string
	link, next          []string // the header values; shared, never written to
}

// SessionPath names a session in the URL.
type SessionPath struct {
	SessionID string `path:"sessionID" pattern:"^ses" json:"-"`
}

// SessionListQuery filters GET /session.
type SessionListQuery struct {
	Roots  bool    `query:"roots" description:"Only sessions without a parent."`
	Start  float64 `query:"start" description:"Only sessions updated at or after this time (epoch ms)."`
	Search string  `query:"search" description:"Case-insensitive substring of the title."`
	Limit  int     `query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 100). When more exist, the Link and x-next-cursor headers point to the next page."`
	Before string  `query:"before" description:"The x-next-cursor of the previous page."`
	Scope  string  `query:"scope" enum:"project" description:"Accepted for OpenCode compatibility: listings are always scoped to the directory."`
	Path   string  `query:"path" description:"Accepted for OpenCode compatibility."`
}

// SessionSearch is GET /session/search.
type SessionSearch struct {
	session.SearchInput
}

// SessionCreate is the body of POST /session.
type SessionCreate struct {
	session.CreateInput
}

// SessionUpdate is PATCH /session/{sessionID}.
type SessionUpdate struct {
	SessionPath
	session.UpdateInput
}

// SessionFork is POST /session/{sessionID}/fork.
type SessionFork struct {
	SessionPath
	session.ForkInput
}

// MessageListQuery pages GET /session/{sessionID}/message.
type MessageListQuery struct {
	SessionPath
	Limit  int    `query:"limit" minimum:"0" description:"The newest N messages. When older ones exist, Link and x-next-cursor point to them."`
	Before string `query:"before" description:"The x-next-cursor of the previous page."`
}

// MessagePath names a message in the URL.
type MessagePath struct {
	SessionPath
	MessageID string `path:"messageID" pattern:"^msg" json:"-"`
}

// PartPath names a part of a message in the URL.
type PartPath struct {
	MessagePath
	PartID string `path:"partID" pattern:"^prt" json:"-"`
}

// PartUpdate is PATCH /session/{sessionID}/message/{messageID}/part/{partID}: the whole new part.
type PartUpdate struct {
	PartPath
	session.Part
}

// maxSearch bounds ?search=: a title is short, and SQLite refuses very long LIKE patterns.
const maxSearch = 1024

// Ops declares the session routes.
func (s *Sessions) Ops() []Op {
	return append(s.promptOps(),
		op(http.MethodGet, "/session", "session.list", "List sessions", func(c *Call, in *SessionListQuery) (encodedJSON, error) {
			if len(in.Search) > maxSearch {
				return nil, errs.E(errs.Invalid, "search: at most %d bytes, got %d", maxSearch, len(in.Search))
			}
			body, next, err := s.Service.ListJSON(c.Ctx(), session.ListInput{
				Directory: c.Dir, Roots: in.Roots, Start: int64(in.Start), Search: in.Search, Limit: in.Limit, Cursor: in.Before,
			})
			if err != nil {
				return nil, err
			}
			s.setNextPage(c, next)
			return body, nil
		}).answers(&[]session.Session{}).doc("Sessions of the directory, most recently updated first. Pages never truncate silently: "+
			"when more sessions exist, the response carries `Link: <…>; rel=\"next\"` and `x-next-cursor`."),
		op(http.MethodPost, "/session", "session.create", "Create session", func(c *Call, in *SessionCreate) (session.Session, error) {
			return s.Service.Create(c.Ctx(), c.Dir, in.CreateInput)
		}).doc("An empty body is fine: the title defaults to \"New session - <time>\". The permission rules only tighten "+
			"the user's: their ask and deny make calls stricter, and an allow never allows what the user's rules ask or deny.", 404, 413, 415),
		op(http.MethodGet, "/session/search", "session.search", "Search conversations", func(c *Call, in *SessionSearch) ([]session.SearchHit, error) {
			return s.Service.Search(c.Ctx(), c.Dir, in.SearchInput)
		}).doc("tandem extension: the sessions of the directory whose conversation (the text the user and the model wrote, "+
			"not tool output) contains query, case-insensitively, most recently updated first, each with its newest match: "+
			"the message and part, and a one-line snippet with the match's place in it. GET /session?search= matches titles only.", 400),
		op(http.MethodGet, "/session/status", "session.status", "Get session status", func(c *Call, _ *struct{}) (map[string]session.Status, error) {
			return s.Service.Statuses(), nil
		}).doc("Busy and retrying sessions; idle ones are absent."),
		op(http.MethodGet, "/session/{sessionID}", "session.get", "Get session", func(c *Call, in *SessionPath) (session.Session, error) {
			return s.Service.Get(c.Ctx(), in.SessionID)
		}).doc("", 404),
		op(http.MethodPatch, "/session/{sessionID}", "session.update", "Update session", func(c *Call, in *SessionUpdate) (session.Session, error) {
			return s.Service.Update(c.Ctx(), in.SessionID, in.UpdateInput)
		}).doc("", 404, 413, 415),
		op(http.MethodDelete, "/session/{sessionID}", "session.delete", "Delete session", func(c *Call, in *SessionPath) (bool, error) {
			return true, s.Service.Delete(c.Ctx(), in.SessionID)
		}).doc("Deletes the session, its children, messages and parts; a running turn is aborted and its pending requests rejected.", 404),
		op(http.MethodGet, "/session/{sessionID}/children", "session.children", "Get session children", func(c *Call, in *SessionPath) ([]session.Session, error) {
			return s.Service.Children(c.Ctx(), in.SessionID)
		}).doc("", 404),
		op(http.MethodPost, "/session/{sessionID}/fork", "session.fork", "Fork session", func(c *Call, in *SessionFork) (session.Session, error) {
			return s.Service.Fork(c.Ctx(), in.SessionID, in.ForkInput)
		}).doc("A new session with the messages before messageID (all when absent), titled \"<title> (fork #n)\".", 404, 415),
		op(http.MethodGet, "/session/{sessionID}/message", "session.messages", "Get session messages", func(c *Call, in *MessageListQuery) (encodedJSON, error) {
			body, next, err := s.Service.MessagesJSON(c.Ctx(), in.SessionID, session.MessagesInput{Limit: in.Limit, Before: in.Before})
			if err != nil {
				return nil, err
			}
			s.setNextPage(c, next)
			return body, nil
		}).answers(&[]session.WithParts{}).doc("Oldest first. With limit, the newest N and a cursor to the older ones.", 404),
		op(http.MethodGet, "/session/{sessionID}/message/{messageID}", "session.message", "Get message", func(c *Call, in *MessagePath) (session.WithParts, error) {
			return s.Service.Message(c.Ctx(), in.SessionID, in.MessageID)
		}).doc("", 404),
		op(http.MethodDelete, "/session/{sessionID}/message/{messageID}", "session.deleteMessage", "Delete message", func(c *Call, in *MessagePath) (bool, error) {
			return true, s.Service.DeleteMessage(c.Ctx(), in.SessionID, in.MessageID)
		}).doc("Deletes the message and its parts in one write and publishes message.removed. "+
			"Refused with 409 SessionBusyError while a turn of the session runs or is queued.", 404, 409),
		op(http.MethodPatch, "/session/{sessionID}/message/{messageID}/part/{partID}", "part.update", "Update part", func(c *Call, in *PartUpdate) (session.Part, error) {
			return s.Service.UpdatePart(c.Ctx(), in.SessionID, in.MessageID, in.PartID, in.Part)
		}).doc("Replaces the part with the body (a whole Part of the same type; ids left empty are taken from the path) "+
			"and publishes message.part.updated. Refused with 409 SessionBusyError while the session is busy.", 404, 409, 413, 415),
		op(http.MethodDelete, "/session/{sessionID}/message/{messageID}/part/{partID}", "part.delete", "Delete part", func(c *Call, in *PartPath) (bool, error) {
			return true, s.Service.DeletePart(c.Ctx(), in.SessionID, in.MessageID, in.PartID)
		}).doc("Deletes the part and publishes message.part.removed. Refused with 409 SessionBusyError while the session is busy.", 404, 409),
	)
}

// setNextPage advertises the next page the way OpenCode's message listing does.
func (s *Sessions) setNextPage(c *Call, cursor string) {
	if cursor == "" {
		return
	}
	u := c.R.URL
	last := s.lastLink.Load()
	if last == nil || last.cursor != cursor || last.path != u.Path || last.query != u.RawQuery {
		q := u.Query()
		q.Set("before", cursor)
		if q.Get("limit") == "" {
			q.Set("limit", strconv.Itoa(session.DefaultPage))
		}
		link := "<" + (&url.URL{Path: u.Path, RawQuery: q.Encode()}).String() + `>; rel="next"`
		last = &nextLink{path: u.Path, query: u.RawQuery, cursor: cursor, link: []string{link}, next: []string{cursor}}
		s.lastLink.Store(last)
	}
	h := c.Header()
	h["Link"] = last.link[:1:1]
	h["X-Next-Cursor"] = last.next[:1:1]
}

// SessionPrompt is the body of POST /session/{sessionID}/message and prompt_async.
type SessionPrompt struct {
	SessionPath
	session.PromptInput
}

// SessionShell is the body of POST /session/{sessionID}/shell.
type SessionShell struct {
	SessionPath
	session.ShellInput
}

// SessionSummarize is POST /session/{sessionID}/summarize.
type SessionSummarize struct {
	SessionPath
	session.SummarizeInput
}

// SessionRevert is POST /session/{sessionID}/revert.
type SessionRevert struct {
	SessionPath
	session.RevertInput
}

// DiffQuery is GET /session/{sessionID}/diff.
type DiffQuery struct {
	SessionPath
	MessageID string `query:"messageID" description:"Only the changes of that user message's turn."`
}

// promptOps are the routes that run the agent.
func (s *Sessions) promptOps() []Op {
	return []Op{
		op(http.MethodPost, "/session/{sessionID}/message", "session.prompt", "Send message", func(c *Call, in *SessionPrompt) (session.WithParts, error) {
			return s.Service.Prompt(c.Ctx(), in.SessionID, in.PromptInput)
		}).doc("Stores the user message and blocks until its turn ends; returns the last assistant message. "+
			"A prompt sent while the session is busy is queued and runs next.", 404, 413, 415),
		op(http.MethodPost, "/session/{sessionID}/prompt_async", "session.prompt_async", "Send async message", func(c *Call, in *SessionPrompt) (NoContent, error) {
			_, err := s.Service.PromptAsync(c.Ctx(), in.SessionID, in.PromptInput)
			return NoContent{}, err
		}).doc("Answers 204 once the user message is stored; the turn runs (or queues) and streams on /event.", 404, 413, 415),
		op(http.MethodPost, "/session/{sessionID}/shell", "session.shell", "Run shell command", func(c *Call, in *SessionShell) (session.WithParts, error) {
			return s.Service.Shell(c.Ctx(), in.SessionID, in.ShellInput)
		}).doc("Runs the command the user typed (the TUI's `!ls`) in the session's directory, without asking permission, and stores it "+
			"as OpenCode does: a user message with a synthetic note and an assistant message with one `bash` tool part, streamed "+
			"running → completed like any tool call. The session is busy meanwhile: 409 SessionBusyError while a turn runs, "+
			"and POST /session/{sessionID}/abort kills the command's process group. Returns the assistant message.", 404, 409, 413, 415),
		op(http.MethodPost, "/session/{sessionID}/abort", "session.abort", "Abort session", func(c *Call, in *SessionPath) (bool, error) {
			return s.Service.Abort(c.Ctx(), in.SessionID)
		}).doc("Stops the running turn and the turns queued behind it; running tools are killed and pending requests rejected.", 404),
		op(http.MethodPost, "/session/{sessionID}/summarize", "session.summarize", "Summarize session", func(c *Call, in *SessionSummarize) (bool, error) {
			return true, s.Service.Summarize(c.Ctx(), in.SessionID, in.SummarizeInput)
		}).doc("Compacts the session as OpenCode's /compact: a user message with a compaction part, answered by the model with a "+
			"summary of the conversation before it (an assistant message with summary true); session.compacted follows. "+
			"Later prompts send the model the summary instead of the messages before it. Answers once the summary is written; "+
			"refused with 409 SessionBusyError while the session is busy.", 400, 404, 409, 413, 415),
		op(http.MethodGet, "/session/{sessionID}/todo", "session.todo", "Get session todos", func(c *Call, in *SessionPath) ([]tool.Todo, error) {
			return s.Service.Todos(c.Ctx(), in.SessionID)
		}).doc("", 404),
		op(http.MethodGet, "/session/{sessionID}/diff", "session.diff", "Get session diff", func(c *Call, in *DiffQuery) ([]session.FileDiff, error) {
			return s.Service.Diff(c.Ctx(), in.SessionID, in.MessageID)
		}).doc("The files this session changed, each before its first change and after its last.", 404),
		op(http.MethodPost, "/session/{sessionID}/revert", "session.revert", "Revert message", func(c *Call, in *SessionRevert) (session.Session, error) {
			return s.Service.Revert(c.Ctx(), in.SessionID, in.RevertInput)
		}).doc("Puts the project's files back as they were before the message (or part) and marks the session's `revert` "+
			"field {messageID, partID?, snapshot, diff}; publishes session.updated. The later messages stay, hidden, until "+
			"the next prompt drops them for good (message.removed), or until unrevert. "+
			"Refused with 409 SessionBusyError while a turn of the session runs or is queued.", 404, 409, 413, 415),
		op(http.MethodPost, "/session/{sessionID}/unrevert", "session.unrevert", "Restore reverted messages", func(c *Call, in *SessionPath) (session.Session, error) {
			return s.Service.Unrevert(c.Ctx(), in.SessionID)
		}).doc("Brings back the files as they were before the revert and clears the session's `revert` field; publishes "+
			"session.updated. Refused with 409 SessionBusyError while the session is busy.", 404, 409),
		op(http.MethodGet, "/agent", "app.agents", "List agents", func(c *Call, _ *struct{}) ([]session.AgentInfo, error) {
			return s.Service.Agents(), nil
		}),
	}
}
