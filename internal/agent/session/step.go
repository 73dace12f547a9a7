package session

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// step is the state of one model call: the assistant message and the parts it is growing.
type step struct {
	s    *Service
	dir  string
	msg  *Message
	text *Part // the text part being streamed, if any
	rsn  *Part // the reasoning part being streamed, if any
	// thought holds the reasoning parts the provider ended (ReasoningDone) before the step did.
	thought []*Part

	emitted bool // anything reached the client; a retry would duplicate it
	calls   []provider.ToolCall
	reason  string
	usage   provider.Usage

	// deltas announces the streamed text at a bounded rate; unsent holds what it has not announced
	// yet, consecutive deltas of one part joined.
	deltas *coalescer
	unsent []partDelta
	live   []*Part // the parts open() started, guarded by deltas: Service.live reads them
	// announced is, per part, how much of its text the deltas sent so far carry, in UTF-16 code
	// units (a browser's string length): each delta says where it starts, so a client that loaded
	// the part mid-stream applies exactly what its copy lacks.
	announced map[*Part]int
}

type partDelta struct {
	part *Part
	text string
}

func (s *Service) newStep(dir string, msg *Message) *step {
	st := &step{s: s, dir: dir, msg: msg}
	st.deltas = newCoalescer(s.updateEvery, st.publishDeltas)
	s.live.add(st)
	return st
}

// open starts a streamed text or reasoning part.
func (st *step) open(kind string) *Part {
	empty := ""
	p := &Part{ID: st.s.ids.New(id.Part), SessionID: st.msg.SessionID, MessageID: st.msg.ID, Type: kind,
		Text: &empty, Time: &PartTime{Start: st.s.nowMS()}}
	st.deltas.Flush() // the other part's text comes first
	st.deltas.Do(func() { st.live = append(st.live, p) })
	st.s.publishPart(st.dir, *p)
	return p
}

// delta grows a streamed part; its text is announced with the step's other deltas, at a bounded rate.
func (st *step) delta(p *Part, d string) {
	st.deltas.Add(func() {
		*p.Text += d
		if n := len(st.unsent); n > 0 && st.unsent[n-1].part == p {
			st.unsent[n-1].text += d
			return
		}
		st.unsent = append(st.unsent, partDelta{part: p, text: d})
	})
}

func (st *step) publishDeltas() {
	if st.announced == nil {
		st.announced = map[*Part]int{}
	}
	for _, d := range st.unsent {
		offset := st.announced[d.part]
		st.announced[d.part] = offset + utf16Len(d.text)
		st.s.publish(st.dir, "message.part.delta", map[string]any{
			"sessionID": d.part.SessionID, "messageID": d.part.MessageID, "partID": d.part.ID, "field": "text", "delta": d.text,
			"offset": offset,
		})
	}
	clear(st.unsent)
	st.unsent = st.unsent[:0]
}

// closeStreams finishes the open text and reasoning parts and stores them in one transaction.
func (st *step) closeStreams(ctx context.Context) error {
	st.deltas.Close()          // every delta is out before the parts' final state
	defer st.s.live.remove(st) // once stored: a listing in between finds the parts in both places
	var closed []Part
	st.deltas.Do(func() {
		for _, p := range st.parts() {
			if p != nil {
				if p.Time.End == 0 {
					p.Time.End = st.s.nowMS()
				}
				closed = append(closed, *p)
			}
		}
	})
	if len(closed) == 0 {
		return nil
	}
	err := st.s.db.Tx(ctx, func(q store.Tx) error {
		for _, p := range closed {
			if err := putPart(ctx, q, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		// The parts were announced as they streamed but never stored: withdraw them, so that no
		// client keeps text the store does not hold (the message's error says why).
		for _, p := range closed {
			st.s.publish(st.dir, "message.part.removed", map[string]any{"sessionID": p.SessionID, "messageID": p.MessageID, "partID": p.ID})
		}
		st.rsn, st.text, st.thought = nil, nil, nil
		return saveFailed(err)
	}
	for _, p := range closed {
		st.s.publishPart(st.dir, p)
	}
	st.rsn, st.text, st.thought = nil, nil, nil
	return nil
}

// parts returns the step's streamed parts in the order they began: its reasoning, then its text.
func (st *step) parts() []*Part {
	return append(slices.Clone(st.thought), st.rsn, st.text)
}

func (st *step) emit(ev provider.Event) error {
	switch ev.Kind {
	case provider.TextDelta:
		if ev.Text == "" {
			return nil
		}
		st.emitted = true
		if st.text == nil {
			st.text = st.open("text")
		}
		st.delta(st.text, ev.Text)
	case provider.ReasoningDelta:
		if ev.Text == "" {
			return nil
		}
		st.emitted = true
		if st.rsn == nil {
			st.rsn = st.open("reasoning")
		}
		st.delta(st.rsn, ev.Text)
	case provider.ReasoningDone:
		// The block's signature (or its encrypted form) is what the provider needs back with the
		// conversation; it rides in the part's metadata, as OpenCode keeps a provider's metadata.
		st.emitted = true
		if st.rsn == nil {
			st.rsn = st.open("reasoning") // a redacted block has no text
		}
		p := st.rsn
		st.deltas.Do(func() {
			p.Metadata = reasoningMetadata(ev.Reasoning)
			p.Time.End = st.s.nowMS()
		})
		st.thought = append(st.thought, p)
		st.rsn = nil
	case provider.ToolCallReady:
		st.emitted = true
		st.calls = append(st.calls, ev.ToolCall)
	case provider.Finished:
		st.reason, st.usage = ev.Reason, ev.Usage
	}
	return nil
}

// call streams the step's model call, retrying errors where retrying helps and nothing was shown
// yet; the session's status says when the next attempt comes.
func (st *step) call(ctx context.Context, ag Agent, prov provider.Provider, req provider.Request) error {
	s, dir, sid := st.s, st.dir, st.msg.SessionID
	for attempt := 1; ; attempt++ {
		err := prov.Stream(ctx, req, st.emit)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var pe *provider.Error
		if !errors.As(err, &pe) || !pe.Retryable() || st.emitted || attempt > ag.Retries {
			return err
		}
		wait := ag.RetryBase << (attempt - 1)
		if pe.RetryAfter > 0 {
			wait = pe.RetryAfter
		}
		wait = min(wait, time.Minute)
		s.setStatus(dir, sid, Status{Type: "retry", Attempt: attempt, Message: pe.Message, Next: s.now().Add(wait).UnixMilli()})
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		s.setStatus(dir, sid, Status{Type: "busy"})
	}
}
