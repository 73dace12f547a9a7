package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/tandem-dev/tandem/api"
)

// openCodeSeqBytes is what OpenCode 1.18.33 sends on /event for one turn whose model runs
// `seq 1 100000` through its bash tool, from the prompt to session.idle (measured against a
// scripted model; docs/benchmarks.md has the figures and how to take them again). OpenCode's own
// figure happens to carry no output while the command runs; tandem streams it and still fits.
const openCodeSeqBytes = 68_418

// liveClient applies a turn's events to one bash part as a client does: a whole part replaces the
// live output, a delta on api.FieldLiveOutput appends at its offset.
type liveClient struct {
	partID    string
	live      string
	deltas    int
	misplaced []string
	final     map[string]any // the completed part's metadata
	output    string         // the completed part's state.output
}

func (c *liveClient) apply(t *testing.T, e event) {
	t.Helper()
	if p, ok := e.part(); ok && p.Type == "tool" && p.State != nil {
		c.partID = p.ID
		switch p.State.Status {
		case "running":
			c.live, _ = p.State.Metadata["output"].(string)
		case "completed":
			c.final, c.output = p.State.Metadata, *p.State.Output
		}
		return
	}
	if e.Type != api.EventPartDelta {
		return
	}
	var d api.PartDelta
	if err := json.Unmarshal(e.Properties, &d); err != nil {
		t.Fatal(err)
	}
	if d.Field != api.FieldLiveOutput {
		return
	}
	c.deltas++
	if have := len(utf16.Encode([]rune(c.live))); d.PartID != c.partID || d.Offset != have {
		c.misplaced = append(c.misplaced, fmt.Sprintf("%d bytes at %d onto %d units", len(d.Delta), d.Offset, have))
		return
	}
	c.live += d.Delta
}

// runTurn prompts and returns the turn's events up to its session.idle and their bytes on /event.
func runTurn(t *testing.T, td *tandem, sid, prompt string) ([]event, int) {
	t.Helper()
	events := td.subscribe(t)
	from := events.mark()
	td.promptAsync(t, sid, prompt)
	events.waitFor(t, "the turn's end", idle(sid))
	var turn []event
	bytes := 0
	for _, e := range events.since(from) {
		turn = append(turn, e)
		bytes += e.wire
		if e.Type == "session.idle" && e.sessionID() == sid {
			break
		}
	}
	return turn, bytes
}

func TestALongCommandsOutputCostsLessOnTheEventStreamThanInOpenCode(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": "allow"}}`})
	sid := td.newSession(t)
	turn, bytes := runTurn(t, td, sid, "run: seq 1 100000")

	var c liveClient
	for _, e := range turn {
		c.apply(t, e)
	}
	t.Logf("seq 1 100000: %d events, %d bytes on /event (OpenCode 1.18.33: %d); %d live output deltas", len(turn), bytes, openCodeSeqBytes, c.deltas)
	if len(c.misplaced) > 0 {
		t.Fatalf("live output deltas that do not start where the client's copy ends: %v", c.misplaced)
	}
	if !strings.HasSuffix(c.output, "\n99999\n100000\n") || c.final["output"] != c.output || c.final["truncated"] != true {
		t.Fatalf("the completed part: output ends %q, metadata %v", c.output[max(0, len(c.output)-40):], c.final["truncated"])
	}
	parts := toolParts(td.messages(t, sid))
	if len(parts) != 1 || *parts[0].State.Output != c.output || parts[0].State.Metadata["output"] != c.output {
		t.Fatal("the stored part differs from the announced one")
	}
	if bytes > openCodeSeqBytes {
		t.Fatalf("the turn took %d bytes of /event, more than OpenCode's %d", bytes, openCodeSeqBytes)
	}
}

func TestAClientFollowingTheEventStreamHoldsACommandsWholeOutput(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": "allow"}}`})
	sid := td.newSession(t)
	// 300 lines, 3.3 KB, printed over a moment: streamed as they come, all of them.
	turn, _ := runTurn(t, td, sid, "run: for i in $(seq 1 300); do echo line-é-$i; sleep 0.001; done")
	var c liveClient
	for _, e := range turn {
		before := c.live
		c.apply(t, e)
		if p, ok := e.part(); ok && p.Type == "tool" && p.State.Status == "completed" && before != c.output {
			t.Errorf("before the final state the client held %d bytes of live output, want the %d of the final output", len(before), len(c.output))
		}
	}
	var want strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&want, "line-é-%d\n", i)
	}
	if len(c.misplaced) > 0 {
		t.Fatalf("live output deltas that do not start where the client's copy ends: %v", c.misplaced)
	}
	if c.deltas == 0 || c.output != want.String() || c.final["output"] != want.String() {
		t.Fatalf("%d deltas; the final output %q", c.deltas, c.output)
	}
}

func TestAClientLoadingASessionMidCommandGetsTheOutputSoFar(t *testing.T) {
	td := startTandem(t, setup{config: `{"permission": {"bash": "allow"}}`})
	sid := td.newSession(t)
	events := td.subscribe(t)
	td.promptAsync(t, sid, "run: echo loaded-first; until [ -f release ]; do sleep 0.02; done; echo loaded-second")
	events.waitFor(t, "the first line on the stream", func(e event) bool {
		if p, ok := e.part(); ok && p.State != nil && p.State.Status == "running" {
			out, _ := p.State.Metadata["output"].(string)
			return strings.Contains(out, "loaded-first")
		}
		return e.Type == api.EventPartDelta && strings.Contains(string(e.Properties), "loaded-first")
	})
	// The listing shows the running part with the output announced so far.
	var listed []struct {
		Parts []struct {
			Type  string `json:"type"`
			State *struct {
				Status   string         `json:"status"`
				Metadata map[string]any `json:"metadata"`
			} `json:"state"`
		} `json:"parts"`
	}
	td.call(t, "GET", "/session/"+sid+"/message", "", 200, &listed)
	found := false
	for _, m := range listed {
		for _, p := range m.Parts {
			if p.Type == "tool" && p.State != nil && p.State.Status == "running" {
				found = p.State.Metadata["output"] == "loaded-first\n"
			}
		}
	}
	if !found {
		t.Fatalf("GET /session/{id}/message mid-command: %+v", listed)
	}
	if err := os.WriteFile(filepath.Join(td.project, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	events.waitFor(t, "the turn's end", idle(sid))
	parts := toolParts(td.messages(t, sid))
	if len(parts) != 1 || parts[0].State.Status != "completed" || parts[0].State.Metadata["output"] != "loaded-first\nloaded-second\n" {
		t.Fatalf("the finished part: %+v", parts)
	}
}
