package routes

import (
	"net/http"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/agent/permission"
	"github.com/tandem-dev/tandem/internal/infra/webpush"
)

// Push serves Web Push: the server's VAPID key, the browsers subscribed to it, and the action
// route a notification's Approve and Reject buttons answer through.
type Push struct {
	Service     *webpush.Service
	Permissions *permission.Service
}

// PushKey is GET /push/vapid.
type PushKey struct {
	PublicKey string `json:"publicKey" description:"The VAPID public key (uncompressed P-256 point, base64url): PushManager.subscribe's applicationServerKey."`
}

// PushSubscribe is POST /push/subscription: PushSubscription.toJSON().
type PushSubscribe struct {
	webpush.Subscription
	ExpirationTime *int64 `json:"expirationTime,omitempty" description:"As the browser reports it; ignored."`
}

// PushUnsubscribe is DELETE /push/subscription.
type PushUnsubscribe struct {
	Endpoint string `query:"endpoint" required:"true" description:"The endpoint of the subscription to forget."`
}

// PushAction is POST /push/action.
type PushAction struct {
	Token string `json:"token" required:"true" minLength:"1" description:"The single-use token of the notification button that was tapped."`
}

// PushActionResult says what the action answered.
type PushActionResult struct {
	RequestID string `json:"requestID"`
	Decision  string `json:"decision"`
}

// PushActionClient is how the decision log names an answer given with a notification's button.
const PushActionClient = "web push action"

// Ops declares the push routes.
func (p *Push) Ops() []Op {
	return []Op{
		op(http.MethodGet, "/push/vapid", "push.vapid", "Web Push public key", func(c *Call, _ *struct{}) (PushKey, error) {
			return PushKey{PublicKey: p.Service.PublicKey()}, nil
		}).doc("tandem extension: the key browsers subscribe with. Generated on the first start and kept in the database."),
		op(http.MethodGet, "/push/subscription", "push.subscription.list", "List Web Push subscriptions", func(c *Call, _ *struct{}) ([]webpush.Subscriber, error) {
			return p.Service.Subscribers(c.Ctx())
		}).doc("tandem extension: the browsers that receive notifications, oldest first (their keys are not shown)."),
		op(http.MethodPost, "/push/subscription", "push.subscription.add", "Add a Web Push subscription", func(c *Call, in *PushSubscribe) (bool, error) {
			return true, p.Service.Subscribe(c.Ctx(), in.Subscription, c.R.UserAgent())
		}).doc("tandem extension: the browser's PushSubscription.toJSON(). Subscribing the same endpoint again replaces its keys.", 415),
		op(http.MethodDelete, "/push/subscription", "push.subscription.remove", "Remove a Web Push subscription", func(c *Call, in *PushUnsubscribe) (bool, error) {
			return true, p.Service.Unsubscribe(c.Ctx(), in.Endpoint)
		}).doc("tandem extension: that browser gets no more notifications.", 404),
		op(http.MethodPost, "/push/action", "push.action", "Answer from a notification", func(c *Call, in *PushAction) (PushActionResult, error) {
			requestID, decision, err := p.Service.Redeem(c.Ctx(), in.Token)
			if err != nil {
				return PushActionResult{}, err
			}
			err = p.Permissions.Reply(requestID, permission.Answer{Decision: decision}, pending.Who{Client: PushActionClient, Addr: c.R.RemoteAddr})
			return PushActionResult{RequestID: requestID, Decision: decision}, err
		}).public().doc("tandem extension: what a notification's Approve or Reject button posts from the service worker. "+
			"The body's token is the only credential, never the password: issued for one request and one decision, "+
			"valid for 15 minutes and for one use; answering with it voids the request's other tokens. "+
			"The decision log records the answer as coming from \""+PushActionClient+"\". "+
			"A used, expired or unknown token is 403; a request answered meanwhile is 409 naming the winner.", 403, 409, 415),
	}
}
