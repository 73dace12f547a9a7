package client

import (
	"context"
	"net/http"
	"time"

	"github.com/tandem-dev/tandem/api"
)

// Pair asks the server for a one-time link that signs a device in (a phone), valid for ttl (the
// server's default when 0); base is the server's address as the device reaches it ("" for this
// client's).
func (c *Client) Pair(ctx context.Context, ttl time.Duration, base string) (api.Pairing, error) {
	var p api.Pairing
	err := c.do(ctx, http.MethodPost, "/auth/pair", api.PairRequest{TTL: int(ttl / time.Second), URL: base}, &p)
	return p, err
}
