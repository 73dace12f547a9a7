package store

import (
	"slices"
	"sync"
)

// partCacheBudget bounds the bytes of part documents the cache holds.
const partCacheBudget = 32 << 20

// partCache keeps the parts of messages read recently, by message ID, so that paging through a
// session reads its parts from SQLite once. A message's entry is dropped after every committed
// change to its parts (PutPart, DeletePart, DeleteMessage; DeleteSession drops all), and a reader
// stores what it read only when no change was committed while it read: version counts committed
// changes, and a reader compares it before and after, under the same lock the writers take.
type partCache struct {
	mu      sync.Mutex
	version uint64
	entries map[string][]Part // message ID → its parts in ID order; capacity clipped, so appends copy
	size    int
}

// get returns the cached parts of each of ids that has an entry, the IDs that have none, and
// the version to pass to put.
func (c *partCache) get(ids []string) (map[string][]Part, []string, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	found := make(map[string][]Part, len(ids))
	var missing []string
	for _, id := range ids {
		if ps, ok := c.entries[id]; ok {
			found[id] = ps
		} else {
			missing = append(missing, id)
		}
	}
	return found, missing, c.version
}

// put stores the parts read for these messages, unless a change was committed since get.
func (c *partCache) put(read map[string][]Part, version uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version {
		return
	}
	if c.entries == nil {
		c.entries = map[string][]Part{}
	}
	for id, ps := range read {
		if _, ok := c.entries[id]; ok {
			continue
		}
		ps = slices.Clip(ps)
		c.entries[id] = ps
		c.size += entrySize(id, ps)
	}
	if c.size > partCacheBudget {
		// Map order is random enough to drop an arbitrary quarter of the budget.
		for id, ps := range c.entries {
			if c.size <= partCacheBudget*3/4 {
				break
			}
			delete(c.entries, id)
			c.size -= entrySize(id, ps)
		}
	}
}

// changed drops the entries of these messages (all of them when ids is nil), after a commit.
func (c *partCache) changed(ids []string, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	if all {
		c.entries, c.size = nil, 0
		return
	}
	for _, id := range ids {
		if ps, ok := c.entries[id]; ok {
			delete(c.entries, id)
			c.size -= entrySize(id, ps)
		}
	}
}

func entrySize(id string, ps []Part) int {
	n := len(id) + 64
	for _, p := range ps {
		n += len(p.Data) + len(p.ID) + 64
	}
	return n
}
