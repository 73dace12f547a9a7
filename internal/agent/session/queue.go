package session

import (
	"context"
	"sync"
	"time"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

// runQueue runs each session's turns one at a time, in arrival order, and knows which sessions are
// busy. A session has a runner while a turn runs or waits, or while an edit or a compaction holds
// it; the runner retires when its queue is empty. It knows nothing of what a turn does: run is
// given once, and every runner calls it for each turn it takes.
//
// Everything here is guarded by one mutex, so that "is the session idle" (its runner, its status)
// is answered in one look.
type runQueue struct {
	run func(ctx context.Context, sessionID string, t *turn) (WithParts, error)

	mu      sync.Mutex
	closed  bool
	runners map[string]*runner
	status  map[string]Status // busy and retrying sessions; idle ones are absent, as OpenCode
	wg      sync.WaitGroup    // one per runner
}

type runner struct {
	queue  []*turn
	cancel context.CancelCauseFunc // of the running turn
	done   chan struct{}           // closed when the runner retires
}

// turn is one unit of a session's queue: a prompt's answer, a shell command or a compaction.
type turn struct {
	ctx     context.Context // the enqueuing request's values, never its cancellation
	user    Message
	input   PromptInput
	result  chan turnResult // buffered 1
	resume  *resumePoint    // set when the turn resumes one the server was running when it stopped
	shell   *ShellInput     // set when the turn is a command the user runs (POST /session/{id}/shell)
	compact *compactJob     // set when the turn summarises the session (Summarize) instead
	title   string          // the placeholder title the prompt gave the session, to replace with one the model writes
}

type turnResult struct {
	reply WithParts
	err   error
}

func newRunQueue(run func(ctx context.Context, sessionID string, t *turn) (WithParts, error)) *runQueue {
	return &runQueue{run: run, runners: map[string]*runner{}, status: map[string]Status{}}
}

// schedule queues a turn on its session's runner, starting the runner if the session is idle. It
// reports false when the queue is shutting down.
func (q *runQueue) schedule(sessionID string, t *turn) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	r, busy := q.runners[sessionID]
	if !busy {
		r = &runner{done: make(chan struct{})}
		q.runners[sessionID] = r
	}
	r.queue = append(r.queue, t)
	if !busy {
		q.wg.Add(1)
		go q.drain(sessionID)
	}
	return true
}

// scheduleIdle starts a turn on a session that has none running or queued, and refuses with
// SessionBusyError otherwise.
func (q *runQueue) scheduleIdle(sessionID string, t *turn) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errs.E(errs.Unavailable, "the server is shutting down")
	}
	if _, busy := q.runners[sessionID]; busy {
		return busyError(sessionID)
	}
	q.runners[sessionID] = &runner{done: make(chan struct{}), queue: []*turn{t}}
	q.wg.Add(1)
	go q.drain(sessionID)
	return nil
}

// hold takes an idle session's runner without running anything on it, so that no turn starts
// until release; prompts that arrive meanwhile queue behind it. A busy session is refused with
// SessionBusyError. With waitRetiring, a runner whose last turn has ended (its session.idle is
// out, its reply may be) is waited for, briefly, instead: a client that acts on that idle must not
// be refused.
func (q *runQueue) hold(sessionID string, waitRetiring bool) error {
	q.mu.Lock()
	for retired := false; ; retired = true {
		r, busy := q.runners[sessionID]
		if !busy {
			break
		}
		_, running := q.status[sessionID]
		if !waitRetiring || running || len(r.queue) > 0 || retired {
			q.mu.Unlock()
			return busyError(sessionID)
		}
		q.mu.Unlock()
		select {
		case <-r.done:
		case <-time.After(time.Second):
		}
		q.mu.Lock()
	}
	defer q.mu.Unlock()
	if q.closed {
		return errs.E(errs.Unavailable, "the server is shutting down")
	}
	q.runners[sessionID] = &runner{done: make(chan struct{})}
	q.wg.Add(1)
	return nil
}

// release gives back a runner taken by hold, or runs the turns that queued behind it.
func (q *runQueue) release(sessionID string) {
	q.mu.Lock()
	r := q.runners[sessionID]
	if len(r.queue) == 0 {
		delete(q.runners, sessionID)
		close(r.done)
		q.wg.Done()
		q.mu.Unlock()
		return
	}
	q.mu.Unlock()
	go q.drain(sessionID)
}

// runHeld runs t on a runner taken by hold, before whatever queued behind it.
func (q *runQueue) runHeld(sessionID string, t *turn) {
	q.mu.Lock()
	r := q.runners[sessionID]
	r.queue = append([]*turn{t}, r.queue...)
	q.mu.Unlock()
	go q.drain(sessionID)
}

// drain runs a session's queued turns one after another, then retires the runner.
func (q *runQueue) drain(sessionID string) {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		r := q.runners[sessionID]
		if len(r.queue) == 0 {
			delete(q.runners, sessionID)
			close(r.done)
			q.mu.Unlock()
			return
		}
		t := r.queue[0]
		r.queue = r.queue[1:]
		ctx, cancel := context.WithCancelCause(t.ctx)
		r.cancel = cancel
		q.mu.Unlock()

		reply, err := q.run(ctx, sessionID, t)
		cancel(nil)
		// The runner retires before the last turn's caller hears of it, so that what the caller
		// does next (an edit, a compaction) finds the session idle.
		q.mu.Lock()
		last := len(r.queue) == 0
		if last {
			delete(q.runners, sessionID)
			close(r.done)
		}
		q.mu.Unlock()
		t.result <- turnResult{reply: reply, err: err}
		if last {
			return
		}
	}
}

// stop empties a session's queue, answering each queued turn with settle(turn), cancels its running
// turn with cause, and waits until the runner has retired, or for wait. It reports false when the
// runner did not retire in time (a tool that ignores cancellation cannot hold the caller for long).
func (q *runQueue) stop(sessionID string, cause error, settle func(*turn) WithParts, wait time.Duration) bool {
	q.mu.Lock()
	r, ok := q.runners[sessionID]
	if !ok {
		q.mu.Unlock()
		return true
	}
	queued := r.queue
	r.queue = nil
	cancel := r.cancel
	q.mu.Unlock()
	for _, t := range queued {
		t.result <- turnResult{reply: settle(t), err: nil}
	}
	if cancel != nil {
		cancel(cause)
	}
	select {
	case <-r.done:
		return true
	case <-time.After(wait):
		return false
	}
}

// running reports whether the session has a runner (a turn running or queued).
func (q *runQueue) running(sessionID string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.runners[sessionID]
	return ok
}

// close refuses every turn from now on and returns the sessions that have a runner.
func (q *runQueue) close() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	ids := make([]string, 0, len(q.runners))
	for sid := range q.runners {
		ids = append(ids, sid)
	}
	return ids
}

// wait waits until every runner has retired, or for ctx.
func (q *runQueue) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// setStatus records a session's status; idle removes it.
func (q *runQueue) setStatus(sessionID string, st Status) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if st.Type == "idle" {
		delete(q.status, sessionID)
	} else {
		q.status[sessionID] = st
	}
}

// statuses returns a copy of the sessions that are not idle.
func (q *runQueue) statuses() map[string]Status {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(map[string]Status, len(q.status))
	for k, v := range q.status {
		out[k] = v
	}
	return out
}
