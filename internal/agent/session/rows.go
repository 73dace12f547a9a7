package session

import (
	"context"
	"github.com/tandem-dev/tandem/api"
	"log/slog"
	"time"

	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// events announces the session domain's changes on the bus. Every seam that changes something a
// client shows holds one, so that an event is written the same way wherever the change is made.
type events struct {
	bus *bus.Bus
	log *slog.Logger
}

// publish sends an event; a failure to encode is a bug and is logged, never returned to a client.
func (e events) publish(directory, typ string, props any) {
	e.bus.Emit(e.log, directory, typ, props)
}

// announce publishes a session's new state.
func (e events) announce(sess Session) {
	e.publish(sess.Directory, api.EventSessionUpdated, api.SessionInfo{SessionID: sess.ID, Info: sess})
}

// publishMessage announces a message's new state.
func (e events) publishMessage(dir string, m Message) {
	e.publish(dir, api.EventMessageUpdated, api.MessageUpdated{SessionID: m.SessionID, Info: m})
}

// announceRemoved publishes what dropping a revert removed, once the write has committed.
func (e events) announceRemoved(dir, sessionID string, r removed) {
	for _, p := range r.parts {
		e.publish(dir, api.EventPartRemoved, api.PartRemoved{SessionID: sessionID, MessageID: p[0], PartID: p[1]})
	}
	for _, m := range r.messages {
		e.publish(dir, api.EventMessageRemoved, api.MessageRemoved{SessionID: sessionID, MessageID: m})
	}
}

// sessionRows reads and rewrites the stored session documents and announces what changed: the
// part of the sessions table every seam shares (sharing sets a session's link, a revert its revert
// point, a prompt touches its updated time).
type sessionRows struct {
	db  store.Sessions
	now func() time.Time
	events
}

func (r sessionRows) nowMS() int64 { return r.now().UnixMilli() }

// Get returns a session; a malformed ID is Invalid and an unknown one NotFound.
func (r sessionRows) Get(ctx context.Context, sessionID string) (Session, error) {
	if !id.Valid(id.Session, sessionID) {
		return Session{}, errs.E(errs.Invalid, "malformed session ID %q", sessionID)
	}
	return get(ctx, r.db, sessionID)
}

// mutate applies fn to a stored session, bumps its updated time, stores and announces it.
func (r sessionRows) mutate(ctx context.Context, sessionID string, fn func(*Session)) (Session, error) {
	if !id.Valid(id.Session, sessionID) {
		return Session{}, errs.E(errs.Invalid, "malformed session ID %q", sessionID)
	}
	sess, err := r.change(ctx, r.db, sessionID, fn)
	if err != nil {
		return Session{}, err
	}
	r.announce(sess)
	return sess, nil
}

// change is mutate inside a caller's transaction; the caller announces the result after commit.
func (r sessionRows) change(ctx context.Context, q store.Sessions, sessionID string, fn func(*Session)) (Session, error) {
	sess, err := get(ctx, q, sessionID)
	if err != nil {
		return Session{}, err
	}
	fn(&sess)
	sess.Time.Updated = max(r.nowMS(), sess.Time.Updated)
	if err := put(ctx, q, sess); err != nil {
		return Session{}, err
	}
	return sess, nil
}

// publishPart announces a part's new state, with the time it was announced.
func (r sessionRows) publishPart(directory string, p Part) {
	r.publish(directory, api.EventPartUpdated, api.PartUpdated{SessionID: p.SessionID, Part: p, Time: r.nowMS()})
}
