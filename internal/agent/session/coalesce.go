package session

import (
	"sync"
	"time"
)

// defaultUpdateEvery bounds how often one streaming part is announced: a model streaming tokens or
// a command printing thousands of lines becomes tens of events, not thousands, and a reader sees
// the first update at once and the newest within this interval.
const defaultUpdateEvery = 40 * time.Millisecond

// coalescer publishes a stream of updates at a bounded rate. The first update after a quiet
// interval is published at once; later ones are folded together by the caller's state and published
// at most once per interval, the newest always last — by a timer, or by Flush before anything that
// must follow it on the stream.
//
// publish runs with the coalescer's lock held, so that an update folded in by Add (which runs under
// the same lock) is never half-published.
type coalescer struct {
	every   time.Duration
	publish func()

	mu      sync.Mutex
	last    time.Time // when publish last ran
	dirty   bool      // updates are waiting
	timer   *time.Timer
	pending uint64 // which timer is current; a stale one that fires finds another value
	closed  bool
}

func newCoalescer(every time.Duration, publish func()) *coalescer {
	return &coalescer{every: every, publish: publish}
}

// Add folds an update into the caller's state (fold runs under the lock) and publishes it now or
// schedules it.
func (c *coalescer) Add(fold func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	fold()
	c.dirty = true
	wait := c.every - time.Since(c.last)
	if wait <= 0 || c.every <= 0 {
		c.flushLocked()
		return
	}
	if c.timer == nil {
		c.pending++
		gen := c.pending
		c.timer = time.AfterFunc(wait, func() { c.fire(gen) })
	}
}

func (c *coalescer) fire(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.pending || c.closed {
		return
	}
	c.timer = nil
	c.flushLocked()
}

// Flush publishes what is waiting now.
func (c *coalescer) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
}

// Do runs f under the lock that Add's folds and publish run under, so f sees a consistent state.
func (c *coalescer) Do(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
}

// Close publishes what is waiting and ignores every later update: the stream's final state follows.
func (c *coalescer) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	c.closed = true
}

func (c *coalescer) flushLocked() {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
		c.pending++
	}
	if !c.dirty {
		return
	}
	c.dirty = false
	c.publish()
	c.last = time.Now()
}
