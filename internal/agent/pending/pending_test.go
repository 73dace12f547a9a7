package pending_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tandem-dev/tandem/internal/agent/pending"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type recorder struct {
	mu       sync.Mutex
	asked    []string
	resolved []string
}

func (r *recorder) hooks() pending.Hooks[string, string] {
	return pending.Hooks[string, string]{
		Asked: func(it pending.Item[string]) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.asked = append(r.asked, it.ID)
		},
		Resolved: func(it pending.Item[string], res pending.Resolution[string]) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.resolved = append(r.resolved, it.ID+"="+string(res.Cause)+":"+res.Reply)
		},
	}
}

func (r *recorder) snapshot() (asked, resolved []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...), append([]string(nil), r.resolved...)
}

func newBroker(rec *recorder) *pending.Broker[string, string] {
	return pending.New[string, string](id.Permission, "Permission request", func(reason string) string { return "rejected: " + reason }, rec.hooks())
}

// ask starts Ask in the background and waits until the item is listed.
func ask(t *testing.T, ctx context.Context, b *pending.Broker[string, string], sessionID string, timeout time.Duration) (string, <-chan pending.Resolution[string]) {
	t.Helper()
	itemID := b.NewID()
	done := make(chan pending.Resolution[string], 1)
	go func() { done <- b.Ask(ctx, itemID, sessionID, "may I?", timeout) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := b.Get(itemID); ok {
			return itemID, done
		}
		if time.Now().After(deadline) {
			t.Fatalf("item %s never became pending", itemID)
		}
		time.Sleep(time.Millisecond)
	}
}

func await(t *testing.T, done <-chan pending.Resolution[string]) pending.Resolution[string] {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return")
		return pending.Resolution[string]{}
	}
}

func TestFiftyRacingRepliesHaveExactlyOneWinner(t *testing.T) {
	rec := &recorder{}
	b := newBroker(rec)
	itemID, done := ask(t, context.Background(), b, "ses_1", 0)

	const n = 50
	errsOut := make([]error, n)
	var start sync.WaitGroup
	start.Add(1)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			start.Wait()
			errsOut[i] = b.Reply(itemID, fmt.Sprintf("reply-%d", i), pending.Who{Client: fmt.Sprintf("client-%d", i)})
		})
	}
	start.Done()
	wg.Wait()
	res := await(t, done)

	winners := 0
	for i, err := range errsOut {
		if err == nil {
			winners++
			if res.Reply != fmt.Sprintf("reply-%d", i) || res.By.Client != fmt.Sprintf("client-%d", i) || res.Cause != pending.Replied {
				t.Errorf("Ask returned %+v, but reply %d won", res, i)
			}
			continue
		}
		var e *errs.Error
		if !errors.As(err, &e) || e.Kind != errs.Conflict {
			t.Fatalf("loser %d: err = %v, want a Conflict", i, err)
		}
		if e.Data["reply"] != res.Reply || e.Data["cause"] != "reply" || e.Data["requestID"] != itemID || e.Data["client"] != res.By.Client {
			t.Errorf("loser %d: conflict data %v does not carry the winner %q", i, e.Data, res.Reply)
		}
	}
	if winners != 1 {
		t.Fatalf("%d replies won, want exactly 1", winners)
	}
	if _, resolved := rec.snapshot(); len(resolved) != 1 {
		t.Errorf("Resolved hook ran %d times: %v", len(resolved), resolved)
	}
	if len(b.List("")) != 0 {
		t.Error("the item is still listed after it was answered")
	}
}

func TestReplyToAnUnknownIDIsNotFound(t *testing.T) {
	b := newBroker(&recorder{})
	err := b.Reply("per_doesnotexist", "yes", pending.Who{})
	var e *errs.Error
	if !errors.As(err, &e) || e.Kind != errs.NotFound || e.Name != "NotFoundError" {
		t.Fatalf("err = %#v, want NotFound", err)
	}
}

func TestTimeoutResolvesWithTheFallback(t *testing.T) {
	rec := &recorder{}
	b := newBroker(rec)
	itemID, done := ask(t, context.Background(), b, "ses_1", 20*time.Millisecond)
	res := await(t, done)
	if res.Cause != pending.TimedOut || res.Reply != "rejected: "+res.Reason || res.Reason == "" {
		t.Errorf("resolution = %+v", res)
	}
	err := b.Reply(itemID, "too late", pending.Who{})
	var e *errs.Error
	if !errors.As(err, &e) || e.Kind != errs.Conflict || e.Data["cause"] != "timeout" {
		t.Errorf("a late reply: err = %v, want Conflict naming the timeout", err)
	}
}

func TestCancelledContextResolvesAsCancelled(t *testing.T) {
	b := newBroker(&recorder{})
	ctx, cancel := context.WithCancel(context.Background())
	itemID, done := ask(t, ctx, b, "ses_1", time.Hour)
	cancel()
	res := await(t, done)
	if res.Cause != pending.Cancelled {
		t.Errorf("cause = %s, want cancel", res.Cause)
	}
	if _, ok := b.Get(itemID); ok {
		t.Error("a cancelled item is still pending")
	}
}

func TestListIsOldestFirstAndFiltersBySession(t *testing.T) {
	b := newBroker(&recorder{})
	ctx, cancel := context.WithCancel(context.Background())
	var ids []string
	var dones []<-chan pending.Resolution[string]
	for i := range 6 {
		sessionID := "ses_even"
		if i%2 == 1 {
			sessionID = "ses_odd"
		}
		itemID, done := ask(t, ctx, b, sessionID, 0)
		ids, dones = append(ids, itemID), append(dones, done)
	}
	var all []string
	for _, it := range b.List("") {
		all = append(all, it.ID)
	}
	if fmt.Sprint(all) != fmt.Sprint(ids) {
		t.Errorf("List order %v, want %v", all, ids)
	}
	var odd []string
	for _, it := range b.List("ses_odd") {
		odd = append(odd, it.ID)
		if it.SessionID != "ses_odd" || it.Request != "may I?" {
			t.Errorf("item %+v", it)
		}
	}
	if fmt.Sprint(odd) != fmt.Sprint([]string{ids[1], ids[3], ids[5]}) {
		t.Errorf("List(ses_odd) = %v", odd)
	}
	cancel()
	for _, d := range dones {
		await(t, d)
	}
}

func TestTheResolvedHookRunsBeforeTheWaiterWakes(t *testing.T) {
	var order []string
	var mu sync.Mutex
	b := pending.New[string, string](id.Question, "Question", func(string) string { return "" }, pending.Hooks[string, string]{
		Resolved: func(pending.Item[string], pending.Resolution[string]) {
			mu.Lock()
			order = append(order, "hook")
			mu.Unlock()
		},
	})
	itemID, done := ask(t, context.Background(), b, "ses_1", 0)
	if err := b.Reply(itemID, "a", pending.Who{}); err != nil {
		t.Fatal(err)
	}
	await(t, done)
	mu.Lock()
	order = append(order, "waiter")
	got := fmt.Sprint(order)
	mu.Unlock()
	if got != "[hook waiter]" {
		t.Errorf("order %s", got)
	}
}

func TestAReservedRequestIsListedAtOnceAndItsEarlyReplyReachesTheLaterAsk(t *testing.T) {
	rec := &recorder{}
	b := newBroker(rec)
	itemID := b.NewID()
	created := time.Now().Add(-time.Minute)

	b.Reserve(itemID, "ses_a", "may I?", created)

	if it, ok := b.Get(itemID); !ok || !it.Created.Equal(created) {
		t.Fatalf("the reserved item is listed %v with created %v, want %v", ok, it.Created, created)
	}
	if err := b.Reply(itemID, "yes", pending.Who{Client: "test"}); err != nil {
		t.Fatal(err)
	}
	res := b.Ask(t.Context(), itemID, "ses_a", "may I?", time.Hour)
	if res.Cause != pending.Replied || res.Reply != "yes" {
		t.Fatalf("the Ask after the reply got %+v", res)
	}
	if asked, _ := rec.snapshot(); len(asked) != 1 {
		t.Fatalf("announced %d times, want once (at Reserve)", len(asked))
	}
	if b.Unreserve(itemID, "unused") {
		t.Fatal("Unreserve cancelled a request its Ask had claimed")
	}
}

func TestUnreserveCancelsARequestNoAskClaimed(t *testing.T) {
	rec := &recorder{}
	b := newBroker(rec)
	itemID := b.NewID()
	b.Reserve(itemID, "ses_a", "may I?", time.Now())

	if !b.Unreserve(itemID, "the tool is gone") {
		t.Fatal("Unreserve did not cancel the unclaimed request")
	}
	if _, ok := b.Get(itemID); ok {
		t.Fatal("the cancelled request is still listed")
	}
	if _, resolved := rec.snapshot(); len(resolved) != 1 || !strings.Contains(resolved[0], "=cancel:") {
		t.Fatalf("resolutions %v, want one cancel", resolved)
	}
}

// TestAShutdownLetsARequestGoWithoutResolvingIt: a waiter released by a shutdown (its context
// cancelled with ErrServerStopping, or Release) gets Stopped; no hook runs, so nothing is announced
// or recorded, and the request is no longer listed. A plain cancel still resolves it.
func TestAShutdownLetsARequestGoWithoutResolvingIt(t *testing.T) {
	cases := []struct {
		name      string
		stop      func(cancel context.CancelCauseFunc, b *pending.Broker[string, string], itemID string)
		want      pending.Cause
		announced bool
	}{
		{"a context cancelled for a shutdown releases it", func(cancel context.CancelCauseFunc, _ *pending.Broker[string, string], _ string) {
			cancel(pending.ErrServerStopping)
		}, pending.Stopped, false},
		{"Release releases it", func(_ context.CancelCauseFunc, b *pending.Broker[string, string], itemID string) {
			if !b.Release(itemID) {
				t.Error("Release of a waiting item reported false")
			}
		}, pending.Stopped, false},
		{"a plain cancel resolves it as cancelled", func(cancel context.CancelCauseFunc, _ *pending.Broker[string, string], _ string) {
			cancel(nil)
		}, pending.Cancelled, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			b := newBroker(rec)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			itemID, done := ask(t, ctx, b, "ses_1", time.Hour)
			tc.stop(cancel, b, itemID)
			if res := await(t, done); res.Cause != tc.want {
				t.Fatalf("cause = %s, want %s", res.Cause, tc.want)
			}
			if _, ok := b.Get(itemID); ok {
				t.Error("still listed")
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if got := len(rec.resolved) > 0; got != tc.announced {
				t.Errorf("resolved hooks %v, want announced %v", rec.resolved, tc.announced)
			}
			if b.Release(itemID) {
				t.Error("a second Release reported true")
			}
		})
	}
}
