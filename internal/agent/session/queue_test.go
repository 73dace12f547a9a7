package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

// newTestTurn is a queued turn whose reply names it.
func newTestTurn(t *testing.T, name string) *turn {
	return &turn{ctx: t.Context(), user: Message{ID: name}, result: make(chan turnResult, 1)}
}

// resultOf waits for a turn's result.
func resultOf(t *testing.T, tn *turn) turnResult {
	t.Helper()
	select {
	case r := <-tn.result:
		return r
	case <-time.After(time.Minute):
		t.Fatalf("turn %s got no result within a minute", tn.user.ID)
		return turnResult{}
	}
}

// drained closes q and waits until every runner has retired.
func drained(t *testing.T, q *runQueue) {
	t.Helper()
	q.close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	q.wait(ctx)
	if ctx.Err() != nil {
		t.Fatal("runners still running after a minute")
	}
}

func TestTheRunQueue(t *testing.T) {
	t.Run("a session's turns run one at a time in arrival order, sessions side by side", func(t *testing.T) {
		var mu sync.Mutex
		running := map[string]int{}
		ran := map[string][]string{}
		overlap := false
		q := newRunQueue(func(_ context.Context, sid string, tn *turn) (WithParts, error) {
			mu.Lock()
			running[sid]++
			overlap = overlap || running[sid] > 1
			ran[sid] = append(ran[sid], tn.user.ID)
			mu.Unlock()
			time.Sleep(time.Millisecond) // long enough for a second runner of the session to overlap
			mu.Lock()
			running[sid]--
			mu.Unlock()
			return WithParts{Info: tn.user}, nil
		})
		var turns []*turn
		want := map[string][]string{}
		for i := range 5 {
			for _, sid := range []string{"ses_a", "ses_b"} {
				tn := newTestTurn(t, fmt.Sprintf("%s-%d", sid, i))
				want[sid] = append(want[sid], tn.user.ID)
				turns = append(turns, tn)
				if !q.schedule(sid, tn) {
					t.Fatal("the queue refused a turn")
				}
			}
		}
		for _, tn := range turns {
			if r := resultOf(t, tn); r.err != nil || r.reply.Info.ID != tn.user.ID {
				t.Errorf("turn %s: reply %q, err %v", tn.user.ID, r.reply.Info.ID, r.err)
			}
		}
		drained(t, q)
		if overlap {
			t.Error("two turns of one session ran at once")
		}
		for sid, ids := range want {
			if !slices.Equal(ran[sid], ids) {
				t.Errorf("%s ran %v, want %v", sid, ran[sid], ids)
			}
		}
	})

	t.Run("a held session refuses another hold and runs what queued once released", func(t *testing.T) {
		var ran []string
		var mu sync.Mutex
		q := newRunQueue(func(_ context.Context, _ string, tn *turn) (WithParts, error) {
			mu.Lock()
			ran = append(ran, tn.user.ID)
			mu.Unlock()
			return WithParts{}, nil
		})
		if err := q.hold("ses_a", true); err != nil {
			t.Fatal(err)
		}
		if err := q.hold("ses_a", false); !errs.Is(err, errs.Conflict) {
			t.Errorf("a second hold: %v, want SessionBusyError", err)
		}
		if err := q.scheduleIdle("ses_a", newTestTurn(t, "shell")); !errs.Is(err, errs.Conflict) {
			t.Errorf("a shell on a held session: %v, want SessionBusyError", err)
		}
		queued := newTestTurn(t, "prompt")
		q.schedule("ses_a", queued)
		mu.Lock()
		early := len(ran)
		mu.Unlock()
		if early != 0 {
			t.Error("a turn ran while the session was held")
		}
		q.release("ses_a")
		resultOf(t, queued)
		drained(t, q)
		if !slices.Equal(ran, []string{"prompt"}) {
			t.Errorf("ran %v, want the queued prompt", ran)
		}
	})

	t.Run("stop answers the queued turns, cancels the running one with its cause and waits for it", func(t *testing.T) {
		started := make(chan struct{})
		q := newRunQueue(func(ctx context.Context, _ string, tn *turn) (WithParts, error) {
			close(started)
			<-ctx.Done()
			return WithParts{Info: tn.user}, context.Cause(ctx)
		})
		first, second, third := newTestTurn(t, "first"), newTestTurn(t, "second"), newTestTurn(t, "third")
		for _, tn := range []*turn{first, second, third} {
			q.schedule("ses_a", tn)
		}
		select {
		case <-started:
		case <-time.After(time.Minute):
			t.Fatal("the first turn did not start within a minute")
		}
		cause := errors.New("server stopping")
		var settled []string
		settle := func(tn *turn) WithParts {
			settled = append(settled, tn.user.ID)
			return WithParts{Info: Message{ID: tn.user.ID + "-aborted"}}
		}
		if !q.stop("ses_a", cause, settle, time.Minute) {
			t.Fatal("the running turn did not stop")
		}
		if r := resultOf(t, first); !errors.Is(r.err, cause) {
			t.Errorf("the running turn ended with %v, want its cause", r.err)
		}
		for _, tn := range []*turn{second, third} {
			if r := resultOf(t, tn); r.err != nil || r.reply.Info.ID != tn.user.ID+"-aborted" {
				t.Errorf("queued turn %s: reply %q, err %v", tn.user.ID, r.reply.Info.ID, r.err)
			}
		}
		if !slices.Equal(settled, []string{"second", "third"}) {
			t.Errorf("settled %v, want the two queued turns in order", settled)
		}
		if st := q.statuses(); len(st) != 0 {
			t.Errorf("statuses %v after the stop, want none", st)
		}
		drained(t, q)
	})

	t.Run("a closed queue refuses every turn", func(t *testing.T) {
		q := newRunQueue(func(context.Context, string, *turn) (WithParts, error) { return WithParts{}, nil })
		drained(t, q)
		if q.schedule("ses_a", newTestTurn(t, "late")) {
			t.Error("a turn was queued after close")
		}
		for name, err := range map[string]error{
			"shell": q.scheduleIdle("ses_a", newTestTurn(t, "late")),
			"hold":  q.hold("ses_a", false),
		} {
			if !errs.Is(err, errs.Unavailable) {
				t.Errorf("%s after close: %v, want Unavailable", name, err)
			}
		}
	})
}
