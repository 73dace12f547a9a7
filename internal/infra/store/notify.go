package store

import (
	"context"
	"strings"
)

// Delivery is one entry of the notification delivery log: one attempt to deliver a notification
// to a target, or a notification held back.
type Delivery struct {
	ID             string // dlv_…, time-ordered
	NotificationID string // ntf_…: the attempts of one notification share it
	Target         string // the target's name
	Sink           string // webhook, ntfy, ...
	Event          string // asked, resolved
	Kind           string // permission, question, elicitation
	RequestID      string
	SessionID      string
	Attempt        int    // 1 for the first; 0 for a notification held back
	Status         string // delivered, retrying, failed, skipped
	Code           int    // the HTTP status the target answered, 0 when none
	Detail         string // why it failed, or why it was held back
	Time           int64  // when the attempt started, epoch ms
	Duration       int64  // ms
}

// DeliveryQuery filters the delivery log; zero fields match everything.
type DeliveryQuery struct {
	RequestID string
	Target    string
	Limit     int // default 100
}

// LogDelivery appends an entry to the delivery log and keeps only the newest keep entries (keep
// <= 0 keeps everything). Inside Store.Tx the two statements are one change.
func (s *Queries) LogDelivery(ctx context.Context, d Delivery, keep int) error {
	_, err := s.exec(ctx, `INSERT INTO notify_deliveries (id, notification_id, target, sink, event, kind, request_id, session_id,
		attempt, status, code, detail, time, duration) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.NotificationID, d.Target, d.Sink, d.Event, d.Kind, d.RequestID, d.SessionID,
		d.Attempt, d.Status, d.Code, d.Detail, d.Time, d.Duration)
	if err != nil {
		return wrap("log delivery", err)
	}
	if keep > 0 {
		_, err = s.exec(ctx, `DELETE FROM notify_deliveries WHERE id <= (SELECT id FROM notify_deliveries ORDER BY id DESC LIMIT 1 OFFSET ?)`, keep)
	}
	return wrap("prune delivery log", err)
}

// Deliveries returns the newest entries of the delivery log first.
func (s *Queries) Deliveries(ctx context.Context, q DeliveryQuery) ([]Delivery, error) {
	var where []string
	var args []any
	if q.RequestID != "" {
		where, args = append(where, "request_id = ?"), append(args, q.RequestID)
	}
	if q.Target != "" {
		where, args = append(where, "target = ?"), append(args, q.Target)
	}
	query := `SELECT id, notification_id, target, sink, event, kind, request_id, session_id, attempt, status, code, detail, time, duration
		FROM notify_deliveries`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	if q.Limit <= 0 {
		q.Limit = 100
	}
	rows, err := s.query(ctx, query+` ORDER BY id DESC LIMIT ?`, append(args, q.Limit)...)
	if err != nil {
		return nil, wrap("list deliveries", err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.ID, &d.NotificationID, &d.Target, &d.Sink, &d.Event, &d.Kind, &d.RequestID, &d.SessionID,
			&d.Attempt, &d.Status, &d.Code, &d.Detail, &d.Time, &d.Duration); err != nil {
			return nil, wrap("list deliveries", err)
		}
		out = append(out, d)
	}
	return out, wrap("list deliveries", rows.Err())
}

// DeliveredTargets lists the targets that a request's notification of event (asked, resolved) was
// delivered to, as the log records it: a request announced again after a restart is not told twice.
func (s *Queries) DeliveredTargets(ctx context.Context, requestID, event string) ([]string, error) {
	rows, err := s.query(ctx, `SELECT DISTINCT target FROM notify_deliveries WHERE request_id = ? AND event = ? AND status = 'delivered'`, requestID, event)
	if err != nil {
		return nil, wrap("delivered targets", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, wrap("delivered targets", err)
		}
		out = append(out, t)
	}
	return out, wrap("delivered targets", rows.Err())
}
