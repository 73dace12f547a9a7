package store

import "context"

// The store is split per aggregate so that a second backend (PostgreSQL, for several tandem nodes
// sharing one pending inbox) implements small, separate contracts, and so that tests can wrap the
// real SQLite store to inject failures into exactly one kind of write.

// Sessions stores session documents and what hangs off a session alone (todos, folded diff).
type Sessions interface {
	PutSession(ctx context.Context, r Session) error
	GetSession(ctx context.Context, id string) (Session, error)
	ListSessions(ctx context.Context, q SessionQuery) ([]Session, error)
	SessionDirectories(ctx context.Context) ([]string, error)
	DeleteSession(ctx context.Context, id string) error
	Todos(ctx context.Context, sessionID string) ([]byte, error)
	PutTodos(ctx context.Context, sessionID string, data []byte) error
	SessionDiff(ctx context.Context, sessionID string) ([]byte, error)
	PutSessionDiff(ctx context.Context, sessionID string, data []byte) error
}

// Messages stores messages and their parts.
type Messages interface {
	PutMessage(ctx context.Context, m Message) error
	PutPart(ctx context.Context, p Part) error
	ListMessages(ctx context.Context, q MessageQuery) ([]Message, map[string][]Part, error)
	GetMessage(ctx context.Context, sessionID, messageID string) (Message, []Part, error)
	DeleteMessage(ctx context.Context, sessionID, messageID string) error
	DeletePart(ctx context.Context, sessionID, messageID, partID string) error
	MessageCursor(ctx context.Context, sessionID, messageID string) (int64, error)
	CountMessagesBefore(ctx context.Context, sessionID string, created int64, messageID string) (int, error)
	RunningParts(ctx context.Context) ([]Part, error)
	SearchText(ctx context.Context, directory, query string, limit int) ([]TextHit, error)
	UnfinishedMessages(ctx context.Context) ([]Message, error)
}

// Grants stores persisted "always" grants and the permission decision log.
type Grants interface {
	AddGrant(ctx context.Context, g Grant) error
	Grants(ctx context.Context, projectID string) ([]Grant, error)
	DeleteGrant(ctx context.Context, id string) (Grant, error)
	LogDecision(ctx context.Context, d Decision) error
	Decisions(ctx context.Context, sessionID string, limit int) ([]Decision, error)
}

// Pending stores requests waiting for a person, so that they survive a restart.
type Pending interface {
	PutPending(ctx context.Context, r PendingRequest) error
	DeletePending(ctx context.Context, id string) error
	ListPending(ctx context.Context, kind string) ([]PendingRequest, error)
	// GetPending returns one stored request, or ErrNotFound.
	GetPending(ctx context.Context, id string) (PendingRequest, error)
	// ClaimPending records c as the request's answer if it is still waiting (one conditional
	// update: the first claim on any node wins). It returns the row as it stands afterwards and
	// whether this claim won; a lost claim's row names the winner. An unknown ID is ErrNotFound.
	ClaimPending(ctx context.Context, id string, c PendingClaim) (PendingRequest, bool, error)
	// FinishPending keeps a resolved request as done (several nodes) rather than deleting it.
	FinishPending(ctx context.Context, id string, at int64) error
	// PrunePending deletes done requests answered before the given unix ms.
	PrunePending(ctx context.Context, before int64) (int64, error)
}

// Shares stores the read-only links to sessions, by a hash of their token.
type Shares interface {
	PutShare(ctx context.Context, sessionID string, tokenHash []byte, created int64) error
	SharedSession(ctx context.Context, tokenHash []byte) (string, error)
	DeleteShare(ctx context.Context, sessionID string) error
}

// Push stores the Web Push VAPID key, the browsers subscribed to it, and the hashes of the
// notification buttons' single-use tokens.
type Push interface {
	VAPIDKey(ctx context.Context, key []byte, created int64) ([]byte, error)
	PutPushSubscription(ctx context.Context, p PushSubscription) error
	DeletePushSubscription(ctx context.Context, endpoint string) error
	PushSubscriptions(ctx context.Context) ([]PushSubscription, error)
	PutPushToken(ctx context.Context, t PushToken) error
	PushToken(ctx context.Context, hash []byte) (PushToken, error)
	DeletePushTokens(ctx context.Context, requestID string) (int64, error)
	PrunePushTokens(ctx context.Context, now int64) (int64, error)
}

// Notifications stores the delivery log of notifications (config "notify").
type Notifications interface {
	LogDelivery(ctx context.Context, d Delivery, keep int) error
	Deliveries(ctx context.Context, q DeliveryQuery) ([]Delivery, error)
	DeliveredTargets(ctx context.Context, requestID, event string) ([]string, error)
}

// MCPServers stores the MCP servers added over the API, per project directory.
type MCPServers interface {
	PutMCPServer(ctx context.Context, m MCPServer) error
	DeleteMCPServer(ctx context.Context, directory, name string) (bool, error)
	MCPServers(ctx context.Context, directory string) ([]MCPServer, error)
}

// Tx is every aggregate's queries, run inside one transaction (or, outside Store.Tx, on their own).
type Tx interface {
	Sessions
	Messages
	Grants
	Pending
	Shares
	Push
	Notifications
	MCPServers
}

// Store is a tandem backend: the aggregates' queries plus transactions that span them.
type Store interface {
	Tx
	// Tx runs fn in one write transaction, committed only when fn returns nil.
	Tx(ctx context.Context, fn func(q Tx) error) error
	// SessionsVersion changes after every committed change to the sessions table.
	SessionsVersion() uint64
}

var _ Store = (*DB)(nil)
