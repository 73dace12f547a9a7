package routes

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/terminal"
)

// Ptys serves the pseudo-terminals: REST to manage them and a WebSocket to view and type into one.
type Ptys struct {
	Manager *terminal.Manager
	// Remote lists the terminals other nodes run, when several share one database (nil: none).
	Remote func() []terminal.Info
	// WriteTimeout bounds one frame to a viewer (default 10 s); a viewer that cannot take it in time
	// is disconnected, never waited for.
	WriteTimeout time.Duration
	// ReadLimit bounds one message from a viewer, i.e. one paste (default 8 MiB; the WebSocket
	// library's own default of 32 KiB would end the session on a modest paste).
	ReadLimit int64
}

// PtyPath names a PTY in the URL.
type PtyPath struct {
	PtyID string `path:"ptyID" pattern:"^pty" json:"-"`
}

// PtyCreate is the body of POST /pty.
type PtyCreate struct {
	Command string            `json:"command,omitempty" description:"Program to run; the user's shell when absent."`
	Args    []string          `json:"args,omitempty"`
	Cwd     string            `json:"cwd,omitempty" description:"Working directory; relative to the project directory, which is the default."`
	Title   string            `json:"title,omitempty"`
	Env     map[string]string `json:"env,omitempty" description:"Variables laid over the server's environment (TERM is xterm-256color unless set here)."`
}

// PtyUpdate is PUT /pty/{ptyID}.
type PtyUpdate struct {
	PtyPath
	Title *string  `json:"title,omitempty"`
	Size  *PtySize `json:"size,omitempty" description:"The terminal's window size; the program sees it (SIGWINCH, stty size)."`
}

// PtySize is a window size in character cells.
type PtySize struct {
	Rows int `json:"rows" required:"true" exclusiveMinimum:"0" maximum:"65535"`
	Cols int `json:"cols" required:"true" exclusiveMinimum:"0" maximum:"65535"`
}

// PtyConnectQuery documents the WebSocket upgrade's parameters.
type PtyConnectQuery struct {
	PtyPath
	Cursor string `query:"cursor" description:"Resume after this byte offset (the last cursor frame plus the bytes received since); -1 skips the replay; absent replays the whole scrollback."`
	Ticket string `query:"ticket" description:"A ticket from POST /pty/{ptyID}/connect-token, instead of credentials."`
}

// Ops declares the PTY routes.
func (p *Ptys) Ops() []Op {
	connect := raw(http.MethodGet, "/pty/{ptyID}/connect", "pty.connect", "Connect to PTY session", &PtyConnectQuery{}, false, "application/json",
		p.connect).doc("WebSocket. Server to client: the replay of the scrollback after `cursor` as text frames of at most 64 KiB, "+
		"then one binary frame `0x00` + `{\"cursor\":N}` (N counts bytes of output ever produced), then live output as text frames. "+
		"Client to server: every text or binary frame is typed into the terminal as is. "+
		"Closes with 1000 when the process exits, 1001 when the server shuts down, 1013 when the viewer fell behind "+
		"(reconnect with the cursor), 4404 when the PTY vanished during the upgrade. "+
		"An unknown or exited PTY gets 404 before the upgrade, a foreign Origin or a bad ticket 403.", 403, 404)
	connect.Auth = AuthTicket
	return []Op{
		op(http.MethodGet, "/pty/shells", "pty.shells", "List available shells", func(c *Call, _ *struct{}) ([]terminal.Shell, error) {
			return p.Manager.Shells(), nil
		}).doc("Shells listed in /etc/shells that exist on this machine."),
		op(http.MethodGet, "/pty", "pty.list", "List PTY sessions", func(c *Call, _ *struct{}) ([]terminal.Info, error) {
			list := p.Manager.List()
			if p.Remote != nil {
				list = append(list, p.Remote()...)
			}
			return list, nil
		}).doc("Every PTY, oldest first; exited ones stay (with their exitCode) until deleted. With several nodes on one " +
			"database, every node's terminals, each served by (and forwarded to) the node that runs it."),
		op(http.MethodPost, "/pty", "pty.create", "Create PTY session", func(c *Call, in *PtyCreate) (terminal.Info, error) {
			return p.Manager.Create(c.Ctx(), terminal.CreateInput{
				Command: in.Command, Args: in.Args, Cwd: in.Cwd, Title: in.Title, Env: in.Env, Directory: c.Dir,
			})
		}).doc("Starts the program in a new session and process group on a fresh terminal (24x80); emits pty.created.", 413, 415),
		op(http.MethodGet, "/pty/{ptyID}", "pty.get", "Get PTY session", func(c *Call, in *PtyPath) (terminal.Info, error) {
			return p.Manager.Get(in.PtyID)
		}).doc("", 404),
		op(http.MethodPut, "/pty/{ptyID}", "pty.update", "Update PTY session", func(c *Call, in *PtyUpdate) (terminal.Info, error) {
			u := terminal.UpdateInput{Title: in.Title}
			if in.Size != nil {
				u.Size = &terminal.Size{Rows: in.Size.Rows, Cols: in.Size.Cols}
			}
			return p.Manager.Update(in.PtyID, u)
		}).doc("Renames and/or resizes; emits pty.updated.", 404, 413, 415),
		op(http.MethodDelete, "/pty/{ptyID}", "pty.remove", "Remove PTY session", func(c *Call, in *PtyPath) (bool, error) {
			return true, p.Manager.Remove(in.PtyID)
		}).doc("Kills every process of the terminal, waits for them, and forgets it; emits pty.exited (if it was running) then pty.deleted.", 404),
		op(http.MethodPost, "/pty/{ptyID}/connect-token", "pty.connectToken", "Create PTY WebSocket token", func(c *Call, in *PtyPath) (terminal.Ticket, error) {
			return p.Manager.IssueTicket(in.PtyID)
		}).doc("A single-use ticket, valid 60 s, that opens this PTY's WebSocket without credentials "+
			"(`GET /pty/{ptyID}/connect?ticket=…`): browsers cannot send an Authorization header on a WebSocket.", 404),
		connect,
	}
}

const (
	replayFrame         = 64 << 10
	defaultWriteTimeout = 10 * time.Second
	defaultReadLimit    = 8 << 20
	// statusPtyGone is OpenCode's close code for a PTY that disappeared during the upgrade.
	statusPtyGone websocket.StatusCode = 4404
)

func (p *Ptys) connect(w http.ResponseWriter, r *http.Request) {
	ptyID := chi.URLParam(r, "ptyID")
	if err := checkID("ptyID", "^"+string(id.Pty), ptyID); err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	cursor := int64(0)
	if raw := q.Get("cursor"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < terminal.FromEnd {
			writeError(w, r, errs.E(errs.Invalid, "cursor: expected an integer of at least -1, got %q", raw))
			return
		}
		cursor = n
	}
	// The server's guard lets a request carrying a ticket through without credentials; the ticket
	// must then be good, whatever else the request carries.
	if t := q.Get("ticket"); t != "" && !p.Manager.RedeemTicket(ptyID, t) {
		writeError(w, r, errs.Named(errs.Forbidden, "PtyForbiddenError", "the ticket is unknown, used, expired or for another PTY"))
		return
	}
	info, err := p.Manager.Get(ptyID)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if info.Status == terminal.Exited {
		writeError(w, r, errs.Named(errs.NotFound, "PtyNotFoundError", "PTY session has exited: %s", ptyID).With("ptyID", ptyID))
		return
	}

	// The server's guard has checked Origin (its own origin and --cors ones) before any route runs;
	// the library's own check knows nothing of --cors.
	if err := checkWebSocketHandshake(r); err != nil {
		writeError(w, r, err) // the library would answer in plain text
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has answered the client
	}
	defer conn.CloseNow()
	conn.SetReadLimit(p.readLimit())

	viewer, replay, err := p.Manager.Attach(ptyID, cursor)
	if err != nil {
		_ = conn.Close(statusPtyGone, "session not found")
		return
	}
	defer viewer.Close()

	// The hijacked connection outlives nothing of the request but its values.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer cancel()
		p.typeInto(ctx, conn, ptyID, viewer)
	}()
	code, reason := p.stream(ctx, conn, viewer, replay)
	if code != 0 {
		_ = conn.Close(code, reason)
	}
	cancel()
	_ = conn.CloseNow()
	<-readerDone
	if errors.Is(viewer.Err(), terminal.ErrSlow) {
		LoggerOf(r.Context()).Info("pty viewer dropped: it fell behind", "id", ptyID)
	}
}

// stream sends the replay, the cursor frame and then live output until the viewer ends or the
// connection fails. It returns the close code to send, or 0 when the connection is already gone.
func (p *Ptys) stream(ctx context.Context, conn *websocket.Conn, v *terminal.Viewer, replay terminal.Replay) (websocket.StatusCode, string) {
	send := func(typ websocket.MessageType, b []byte) bool {
		wctx, cancel := context.WithTimeout(ctx, p.writeTimeout())
		defer cancel()
		// A write that times out closes the connection: that is how a stuck viewer is dropped.
		return conn.Write(wctx, typ, b) == nil
	}
	for data := replay.Data; len(data) > 0; {
		n := textPrefix(data, replayFrame)
		if !send(websocket.MessageText, data[:n]) {
			return 0, ""
		}
		data = data[n:]
	}
	meta := append([]byte{0}, `{"cursor":`...)
	meta = strconv.AppendInt(meta, replay.Cursor, 10)
	meta = append(meta, '}')
	if !send(websocket.MessageBinary, meta) {
		return 0, ""
	}
	frame := make([]byte, 0, replayFrame)
	for {
		select {
		case <-ctx.Done():
			return 0, ""
		case sz := <-v.Sizes():
			if !send(websocket.MessageBinary, sizeFrame(sz)) {
				return 0, ""
			}
		case chunk, ok := <-v.Output():
			if !ok {
				return closeFor(v.Err())
			}
			// Coalesce what is already queued into one frame: fewer, larger frames under load.
			frame = append(frame[:0], chunk...)
		more:
			for len(frame) < replayFrame {
				select {
				case next, ok := <-v.Output():
					if !ok {
						break more // the end is seen again on the next receive
					}
					frame = append(frame, next...)
				default:
					break more
				}
			}
			if !send(websocket.MessageText, frame) {
				return 0, ""
			}
		}
	}
}

func closeFor(reason error) (websocket.StatusCode, string) {
	switch {
	case errors.Is(reason, terminal.ErrShutdown):
		return websocket.StatusGoingAway, "server closing"
	case errors.Is(reason, terminal.ErrSlow):
		return websocket.StatusTryAgainLater, "viewer fell behind; reconnect with the cursor"
	default:
		return websocket.StatusNormalClosure, "exited"
	}
}

// sizeFrame tells a viewer the terminal's window size: a binary frame, 0x00 then {"size":{rows,cols}}.
func sizeFrame(sz terminal.Size) []byte {
	b, _ := json.Marshal(map[string]terminal.Size{"size": sz})
	return append([]byte{0}, b...)
}

// viewerSize reads a viewer's control frame, a binary message of 0x00 then {"size":{rows,cols}}: the
// size of this viewer's window (see pty.Viewer.Resize). Anything else is input.
func viewerSize(typ websocket.MessageType, data []byte) (terminal.Size, bool) {
	if typ != websocket.MessageBinary || len(data) < 2 || data[0] != 0 || data[1] != '{' {
		return terminal.Size{}, false
	}
	var m struct {
		Size *terminal.Size `json:"size"`
	}
	if err := json.Unmarshal(data[1:], &m); err != nil || m.Size == nil {
		return terminal.Size{}, false
	}
	return *m.Size, true
}

// typeInto is the connection's one reader: every message is typed into the terminal, except a
// viewer's size report.
func (p *Ptys) typeInto(ctx context.Context, conn *websocket.Conn, ptyID string, v *terminal.Viewer) {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if len(data) == 0 {
			continue
		}
		if sz, ok := viewerSize(typ, data); ok {
			if err := v.Resize(sz); err != nil {
				LoggerOf(ctx).Info("pty viewer size refused", "id", ptyID, "err", err)
			}
			continue
		}
		// An error means the process is gone (its viewer is ending and the stream closes the socket
		// with the right code) or the connection is: either way the input has nowhere to go.
		_ = p.Manager.Write(ctx, ptyID, data)
	}
}

// textPrefix is the length of the longest prefix of b that is at most max bytes and ends on a
// character boundary, so that every text frame is valid UTF-8 on its own.
func textPrefix(b []byte, max int) int {
	if len(b) <= max {
		return len(b)
	}
	n := max
	for n > max-utf8.UTFMax && n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return n
}

func (p *Ptys) writeTimeout() time.Duration {
	if p.WriteTimeout > 0 {
		return p.WriteTimeout
	}
	return defaultWriteTimeout
}

func (p *Ptys) readLimit() int64 {
	if p.ReadLimit > 0 {
		return p.ReadLimit
	}
	return defaultReadLimit
}

// checkWebSocketHandshake refuses, in tandem's JSON error shape, a request that is not a WebSocket
// upgrade (RFC 6455 §4.2.1): a plain GET of the connect URL, say.
func checkWebSocketHandshake(r *http.Request) error {
	hasToken := func(header, token string) bool {
		for _, v := range r.Header.Values(header) {
			for _, part := range strings.Split(v, ",") {
				if strings.EqualFold(strings.TrimSpace(part), token) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case !hasToken("Connection", "upgrade") || !hasToken("Upgrade", "websocket"):
		return errs.E(errs.Invalid, "this URL is a WebSocket: connect with Upgrade: websocket")
	case r.Header.Get("Sec-WebSocket-Version") != "13":
		return errs.E(errs.Invalid, "unsupported WebSocket version %q: tandem speaks version 13", r.Header.Get("Sec-WebSocket-Version"))
	case r.Header.Get("Sec-WebSocket-Key") == "":
		return errs.E(errs.Invalid, "the WebSocket handshake has no Sec-WebSocket-Key")
	}
	return nil
}
