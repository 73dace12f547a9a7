package session

import (
	"encoding/json"
	"sync"

	"github.com/tandem-dev/tandem/internal/infra/store"
)

// liveSteps are the model calls streaming right now, by session: their open text and reasoning
// parts are stored only when the call ends, so a client that (re)loads a session mid-turn reads
// them from here.
type liveSteps struct {
	mu        sync.Mutex
	bySession map[string]*step
	// tools are the running tool parts as last announced, by session and part ID: their stored
	// state has no live output, so a listing shows these while the stored part is running.
	tools map[string]map[string]Part
}

// setTool keeps a running tool part as it was just announced (a snapshot nobody changes).
func (l *liveSteps) setTool(p Part) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tools == nil {
		l.tools = map[string]map[string]Part{}
	}
	if l.tools[p.SessionID] == nil {
		l.tools[p.SessionID] = map[string]Part{}
	}
	l.tools[p.SessionID][p.ID] = p
}

func (l *liveSteps) removeTool(sessionID, partID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.tools[sessionID], partID)
	if len(l.tools[sessionID]) == 0 {
		delete(l.tools, sessionID)
	}
}

// runningTool returns the announced state of a stored part that is a running tool with live
// output, given the stored document.
func (l *liveSteps) runningTool(sessionID string, stored store.Part) (Part, bool) {
	l.mu.Lock()
	p, ok := l.tools[sessionID][stored.ID]
	l.mu.Unlock()
	if !ok {
		return Part{}, false
	}
	var st struct {
		State struct {
			Status string `json:"status"`
		} `json:"state"`
	}
	if json.Unmarshal(stored.Data, &st) != nil || st.State.Status != "running" {
		return Part{}, false
	}
	return p, true
}

func (l *liveSteps) add(st *step) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bySession == nil {
		l.bySession = map[string]*step{}
	}
	l.bySession[st.msg.SessionID] = st
}

func (l *liveSteps) remove(st *step) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bySession[st.msg.SessionID] == st {
		delete(l.bySession, st.msg.SessionID)
	}
}

// parts returns the open parts of the session's streaming call, keyed by message ID, each with
// the text announced so far: a client then adds the deltas that follow, and nothing twice.
func (l *liveSteps) parts(sessionID string) map[string][]Part {
	l.mu.Lock()
	st := l.bySession[sessionID]
	l.mu.Unlock()
	if st == nil {
		return nil
	}
	var out []Part
	st.deltas.Do(func() {
		for _, p := range st.live {
			text := *p.Text
			for _, d := range st.unsent {
				if d.part == p {
					text = text[:len(text)-len(d.text)]
				}
			}
			cp := *p
			cp.Text = &text
			if p.Time != nil {
				t := *p.Time
				cp.Time = &t
			}
			out = append(out, cp)
		}
	})
	if len(out) == 0 {
		return nil
	}
	return map[string][]Part{st.msg.ID: out}
}

// storedHas reports whether a part ID is among a message's stored parts.
func storedHas(rows []store.Part, id string) bool {
	for _, r := range rows {
		if r.ID == id {
			return true
		}
	}
	return false
}
