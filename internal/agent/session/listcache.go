package session

import "sync"

// listCache keeps encoded session listings for as long as the sessions table does not change
// (store.SessionsVersion), so that clients polling GET /session cost no query and no encoding
// while nothing changes. A listing read while a change commits is not kept.
type listCache struct {
	mu      sync.Mutex
	version uint64
	entries map[ListInput]listing
	bytes   int
}

type listing struct {
	body []byte // shared by every caller: never modified
	next string
}

// listCacheBytes bounds the bodies kept; past it the cache starts over.
const listCacheBytes = 1 << 20

func (c *listCache) get(in ListInput, version uint64) (listing, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version {
		return listing{}, false
	}
	l, ok := c.entries[in]
	return l, ok
}

func (c *listCache) put(in ListInput, version uint64, l listing) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(l.body) > listCacheBytes/4 {
		return
	}
	if c.version != version || c.entries == nil || c.bytes+len(l.body) > listCacheBytes {
		c.version, c.entries, c.bytes = version, map[ListInput]listing{}, 0
	}
	c.entries[in] = l
	c.bytes += len(l.body)
}
