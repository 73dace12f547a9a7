package store

import (
	"context"
	"database/sql"
	"errors"
)

// PushSubscription is a browser subscribed to Web Push.
type PushSubscription struct {
	Endpoint  string
	P256dh    string
	Auth      string
	UserAgent string
	Created   int64
}

// VAPIDKey stores key as the server's VAPID private key unless one is stored already, and returns
// the one that is: concurrent first starts agree on a single key.
func (s *Queries) VAPIDKey(ctx context.Context, key []byte, created int64) ([]byte, error) {
	if _, err := s.exec(ctx, `INSERT INTO push_vapid (id, private_key, created) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING`, key, created); err != nil {
		return nil, wrap("store vapid key", err)
	}
	var stored []byte
	err := s.queryRow(ctx, `SELECT private_key FROM push_vapid WHERE id = 1`).Scan(&stored)
	return stored, wrap("read vapid key", err)
}

// PutPushSubscription adds a subscription, replacing the keys of one with the same endpoint.
func (s *Queries) PutPushSubscription(ctx context.Context, p PushSubscription) error {
	_, err := s.exec(ctx, `INSERT INTO push_subscriptions (endpoint, p256dh, auth, user_agent, created) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth, user_agent = excluded.user_agent`,
		p.Endpoint, p.P256dh, p.Auth, p.UserAgent, p.Created)
	return wrap("put push subscription", err)
}

// DeletePushSubscription removes a subscription, or returns ErrNotFound.
func (s *Queries) DeletePushSubscription(ctx context.Context, endpoint string) error {
	res, err := s.exec(ctx, `DELETE FROM push_subscriptions WHERE endpoint = ?`, endpoint)
	if err != nil {
		return wrap("delete push subscription", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap("delete push subscription", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// PushSubscriptions lists the subscriptions, oldest first.
func (s *Queries) PushSubscriptions(ctx context.Context) ([]PushSubscription, error) {
	rows, err := s.query(ctx, `SELECT endpoint, p256dh, auth, user_agent, created FROM push_subscriptions ORDER BY created, endpoint`)
	if err != nil {
		return nil, wrap("list push subscriptions", err)
	}
	defer rows.Close()
	var out []PushSubscription
	for rows.Next() {
		var p PushSubscription
		if err := rows.Scan(&p.Endpoint, &p.P256dh, &p.Auth, &p.UserAgent, &p.Created); err != nil {
			return nil, wrap("list push subscriptions", err)
		}
		out = append(out, p)
	}
	return out, wrap("list push subscriptions", rows.Err())
}

// PushToken is a notification button's single-use token, stored by its SHA-256 alone.
type PushToken struct {
	Hash      []byte // SHA-256 of the token
	RequestID string
	Decision  string // the reply key the button answers with
	Expires   int64  // epoch ms
}

// PutPushToken stores a token's hash with what it answers.
func (s *Queries) PutPushToken(ctx context.Context, t PushToken) error {
	_, err := s.exec(ctx, `INSERT INTO push_tokens (hash, request_id, decision, expires) VALUES (?, ?, ?, ?)`,
		t.Hash, t.RequestID, t.Decision, t.Expires)
	return wrap("put push token", err)
}

// PushToken returns the token with this hash, or ErrNotFound.
func (s *Queries) PushToken(ctx context.Context, hash []byte) (PushToken, error) {
	t := PushToken{Hash: hash}
	err := s.queryRow(ctx, `SELECT request_id, decision, expires FROM push_tokens WHERE hash = ?`, hash).
		Scan(&t.RequestID, &t.Decision, &t.Expires)
	if errors.Is(err, sql.ErrNoRows) {
		return PushToken{}, ErrNotFound
	}
	return t, wrap("get push token", err)
}

// DeletePushTokens voids every token of a request and returns how many there were.
func (s *Queries) DeletePushTokens(ctx context.Context, requestID string) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM push_tokens WHERE request_id = ?`, requestID)
	if err != nil {
		return 0, wrap("delete push tokens", err)
	}
	n, err := res.RowsAffected()
	return n, wrap("delete push tokens", err)
}

// PrunePushTokens deletes the tokens that expired before now (epoch ms) and returns how many.
func (s *Queries) PrunePushTokens(ctx context.Context, now int64) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM push_tokens WHERE expires < ?`, now)
	if err != nil {
		return 0, wrap("prune push tokens", err)
	}
	n, err := res.RowsAffected()
	return n, wrap("prune push tokens", err)
}
