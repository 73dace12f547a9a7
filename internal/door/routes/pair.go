package routes

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/infra/qr"
)

// PairPath is the page a pairing link opens; the code follows it in the URL fragment.
const PairPath = "/pair"

// PairRedeem is POST /auth/pair/redeem.
type PairRedeem struct {
	Code string `json:"code" required:"true" description:"The code from the pairing link's fragment."`
}

func (l *Login) pairOps() []Op {
	return []Op{
		op(http.MethodPost, "/auth/pair", "auth.pair", "Make a one-time link that signs a device in", func(c *Call, in *api.PairRequest) (api.Pairing, error) {
			if in.TTL < 0 || time.Duration(in.TTL)*time.Second > auth.MaxPairTTL {
				return api.Pairing{}, errs.E(errs.Invalid, "ttl must be between 1 and %d seconds", int(auth.MaxPairTTL/time.Second))
			}
			base, err := pairBase(c.R, in.URL)
			if err != nil {
				return api.Pairing{}, err
			}
			code, expires := l.Auth.IssuePairing(time.Duration(in.TTL) * time.Second)
			link := base + PairPath + "#" + code
			svg, err := qr.SVG(link)
			if err != nil {
				return api.Pairing{}, errs.E(errs.Invalid, "the link is too long for a QR code: %v", err)
			}
			ttl := int(time.Until(expires).Round(time.Second) / time.Second)
			return api.Pairing{URL: link, Expires: expires.UnixMilli(), TTL: ttl, SVG: svg}, nil
		}).doc("For `tandem pair` and the UI's Pair a device: the link works once, for minutes, and sets the browser session cookie " +
			"of the device that opens it (POST /auth/pair/redeem)."),
		op(http.MethodPost, "/auth/pair/redeem", "auth.pair.redeem", "Sign in with a pairing link's code", func(c *Call, in *PairRedeem) (NoContent, error) {
			token, err := l.Auth.RedeemPairing(in.Code)
			switch {
			case errors.Is(err, auth.ErrPairingUsed):
				return NoContent{}, errs.Named(errs.Unauthorized, "PairingUsedError", "This pairing link was already used: a link signs in one device once. Make a new one with tandem pair, or Pair a device in the UI.")
			case errors.Is(err, auth.ErrPairingExpired):
				return NoContent{}, errs.Named(errs.Unauthorized, "PairingExpiredError", "This pairing link has expired. Make a new one with tandem pair, or Pair a device in the UI.")
			case err != nil:
				return NoContent{}, errs.Named(errs.Unauthorized, "PairingInvalidError", "This pairing link is not valid. Make a new one with tandem pair, or Pair a device in the UI.")
			}
			l.setCookie(c.W, c.R, token)
			return NoContent{}, nil
		}).public().doc("Trades the code of a pairing link for the session cookie; a code works once.", 401, 415),
	}
}

// pairBase is the origin a pairing link points at: the one the asker names, else the one the
// request was sent to.
func pairBase(r *http.Request, raw string) (string, error) {
	if raw == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		return scheme + "://" + r.Host, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", errs.E(errs.Invalid, "url must be an http(s) address with no user, query or fragment, like https://box.example or http://192.168.1.20:4096; got %q", raw)
	}
	return u.Scheme + "://" + u.Host + strings.TrimSuffix(u.EscapedPath(), "/"), nil
}
