package routes

import (
	"net/http"

	"github.com/tandem-dev/tandem/internal/infra/notify"
)

// Notify serves what the notification targets (config "notify") were sent.
type Notify struct {
	Dispatcher *notify.Dispatcher
}

// DeliveryLogQuery filters GET /notify/delivery.
type DeliveryLogQuery struct {
	RequestID string `query:"requestID" description:"Only the notifications of this request (per_, que_ or eli_)."`
	Target    string `query:"target" description:"Only this target's (its name in the notify config)."`
	Limit     int    `query:"limit" minimum:"1" maximum:"1000" description:"Default 100."`
}

// Ops declares the notify routes.
func (n *Notify) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/notify/delivery", "notify.delivery", "Notification delivery log", func(c *Call, in *DeliveryLogQuery) ([]notify.Delivery, error) {
			return n.Dispatcher.Deliveries(c.Ctx(), notify.DeliveryQuery{RequestID: in.RequestID, Target: in.Target, Limit: in.Limit})
		}).doc("tandem extension: every attempt to deliver a notification of a pending request to a target of the \"notify\" " +
			"config (webhook, ntfy, ...), newest first, with the HTTP status it got; retries are separate entries, and a " +
			"notification held back because the request was answered within the target's delay is an entry with status skipped."),
	}
}
