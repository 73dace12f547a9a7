package session

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/infra/provider"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// errDiskFull is what SQLite says when the disk fills up.
var errDiskFull = errors.New("database or disk is full (injected by the test)")

// failingStore is the real SQLite store with one kind of write made to fail, on the pool and inside
// transactions alike, the way a disk that fills up mid-turn fails whatever write comes next.
type failingStore struct {
	*store.DB
	fail func(p store.Part) bool
}

func (f failingStore) PutPart(ctx context.Context, p store.Part) error {
	if f.fail(p) {
		return errDiskFull
	}
	return f.DB.PutPart(ctx, p)
}

func (f failingStore) Tx(ctx context.Context, fn func(store.Tx) error) error {
	return f.DB.Tx(ctx, func(q store.Tx) error { return fn(failingTx{Tx: q, fail: f.fail}) })
}

type failingTx struct {
	store.Tx
	fail func(p store.Part) bool
}

func (f failingTx) PutPart(ctx context.Context, p store.Part) error {
	if f.fail(p) {
		return errDiskFull
	}
	return f.Tx.PutPart(ctx, p)
}

// finishedTool matches a tool part reaching its final state.
func finishedTool(p store.Part) bool {
	var doc struct {
		Type  string `json:"type"`
		State struct {
			Status string `json:"status"`
		} `json:"state"`
	}
	return json.Unmarshal(p.Data, &doc) == nil && doc.Type == "tool" && (doc.State.Status == "completed" || doc.State.Status == "error")
}

// stepFinish matches the part that commits a step.
func stepFinish(p store.Part) bool { return strings.Contains(string(p.Data), `"type":"step-finish"`) }

func TestAFailedWriteEndsTheTurnVisiblyAndTheStreamMatchesTheStore(t *testing.T) {
	cases := []struct {
		name string
		fail func(store.Part) bool
	}{
		{"the tool's result cannot be stored", finishedTool},
		{"the step's commit cannot be stored", stepFinish},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			db, err := store.Open(ctx, filepath.Join(t.TempDir(), "tandem.db"))
			if err != nil {
				t.Fatal(err)
			}
			b := bus.New(bus.Options{})
			builtins := tool.Builtins(tool.Options{})
			s := New(Options{DB: failingStore{DB: db, fail: c.fail}, Bus: b, Version: "test",
				Agent: &Agent{Providers: demoOnly{provider.NewDemo()}, Tools: builtins.All}})
			t.Cleanup(func() {
				stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				s.Shutdown(stop)
				b.Close()
				if err := db.Close(); err != nil {
					t.Error(err)
				}
			})
			dir := t.TempDir()
			sess, err := s.Create(ctx, dir, CreateInput{})
			if err != nil {
				t.Fatal(err)
			}
			sub, _, err := b.Subscribe("", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()

			reply, err := s.Prompt(ctx, sess.ID, text("run: echo hello"))

			if err != nil {
				t.Fatal(err)
			}
			if reply.Info.Error == nil || !strings.Contains(reply.Info.Error.Data["message"].(string), "disk is full") {
				t.Fatalf("the reply carries no save error: %+v", reply.Info.Error)
			}
			if st := s.Statuses(); len(st) != 0 {
				t.Fatalf("the session is still %v after the failed turn", st)
			}
			lastPart := map[string]json.RawMessage{}
			lastMessage := map[string]json.RawMessage{}
			var sawError string
			evs, _ := sub.Take(nil)
			for _, ev := range evs {
				{
					var env struct {
						Type       string `json:"type"`
						Properties struct {
							Part  json.RawMessage `json:"part"`
							Info  json.RawMessage `json:"info"`
							Error struct {
								Data struct {
									Message string `json:"message"`
								} `json:"data"`
							} `json:"error"`
						} `json:"properties"`
					}
					if err := json.Unmarshal(ev.Payload, &env); err != nil {
						t.Fatal(err)
					}
					switch env.Type {
					case "message.part.updated":
						var p Part
						_ = json.Unmarshal(env.Properties.Part, &p)
						lastPart[p.ID] = env.Properties.Part
					case "message.updated":
						var m Message
						_ = json.Unmarshal(env.Properties.Info, &m)
						lastMessage[m.ID] = env.Properties.Info
					case "session.error":
						sawError = env.Properties.Error.Data.Message
					}
				}
			}
			if !strings.Contains(sawError, "could not save") || !strings.Contains(sawError, "disk is full") {
				t.Fatalf("session.error said %q, want the failed write named", sawError)
			}
			page, err := s.Messages(ctx, sess.ID, MessagesInput{})
			if err != nil {
				t.Fatal(err)
			}
			storedParts := 0
			for _, wp := range page.Items {
				if said, ok := lastMessage[wp.Info.ID]; !ok || !sameJSON(t, said, wp.Info) {
					t.Errorf("message %s: the stream last said %s, the store holds %+v", wp.Info.ID, said, wp.Info)
				}
				for _, p := range wp.Parts {
					storedParts++
					if said, ok := lastPart[p.ID]; !ok || !sameJSON(t, said, p) {
						t.Errorf("part %s: the stream last said %s, the store holds %+v", p.ID, said, p)
					}
				}
			}
			if storedParts != len(lastPart) {
				t.Errorf("the stream announced %d parts, the store holds %d", len(lastPart), storedParts)
			}
		})
	}
}

func sameJSON(t *testing.T, said json.RawMessage, stored any) bool {
	t.Helper()
	raw, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(said, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(a, b)
}
