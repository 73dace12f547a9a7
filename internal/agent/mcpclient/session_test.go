package mcpclient

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

func toolNames(infos []ToolInfo) []string {
	var out []string
	for _, ti := range infos {
		out = append(out, ti.Name)
	}
	return out
}

func TestASessionsServerBelongsToThatSessionAlone(t *testing.T) {
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "tandem.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dir := t.TempDir()
	opts := Options{Directory: dir, Added: db}
	e := newEnv(t, opts)
	const a, b = "ses_0000000000000000000000000a", "ses_0000000000000000000000000b"
	cfgA, pidA := stdioConfig(t)
	cfgB, pidB := stdioConfig(t)
	cfgProject, _ := stdioConfig(t)
	mustAdd(t, e, "project", cfgProject)
	for _, add := range []struct {
		session string
		cfg     json.RawMessage
	}{{a, cfgA}, {b, cfgB}} {
		st, err := e.m.AddForSession(t.Context(), add.session, "editor", add.cfg)
		if err != nil {
			t.Fatalf("AddForSession(%s): %v", add.session, err)
		}
		if got := st[SessionKey("editor", add.session)]; got.Status != Connected || got.SessionID != add.session {
			t.Fatalf("status of the session's server: %+v", st)
		}
	}

	t.Run("the status lists each session's server under its own name, marked with its session", func(t *testing.T) {
		st := e.m.Status()
		if st["project"].SessionID != "" || st["editor@"+a].SessionID != a || st["editor@"+b].SessionID != b || len(st) != 3 {
			t.Fatalf("status: %+v", st)
		}
		raw, err := json.Marshal(st["project"])
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "sessionID") {
			t.Fatalf("a project server's status carries a sessionID: %s", raw)
		}
	})
	t.Run("a session is offered its server's tools, the project and other sessions are not", func(t *testing.T) {
		if got := toolNames(e.m.SessionToolInfos(a)); !slices.Contains(got, "editor_echo") {
			t.Fatalf("session a's tools: %v", got)
		}
		for _, ti := range e.m.SessionToolInfos(a) {
			if ti.Server != "editor" || ti.SessionID != a {
				t.Fatalf("tool info: %+v", ti)
			}
		}
		if got := toolNames(e.m.ToolInfos()); slices.Contains(got, "editor_echo") || !slices.Contains(got, "project_echo") {
			t.Fatalf("the project's tools: %v", got)
		}
		if got := e.m.SessionToolInfos("ses_0000000000000000000000000c"); len(got) != 0 {
			t.Fatalf("a third session is offered: %v", toolNames(got))
		}
		if got := len(e.m.SessionTools(b)); got != len(e.m.SessionToolInfos(b)) || got == 0 {
			t.Fatalf("session b's agent tools: %d", got)
		}
	})
	t.Run("only the session a server belongs to can call its tools", func(t *testing.T) {
		res, err := e.m.CallTool(t.Context(), "editor_echo", json.RawMessage(`{"text":"hi"}`), CallInfo{SessionID: a})
		if err != nil || ResultText(res) != "echo: hi" {
			t.Fatalf("session a's call: %v %v", res, err)
		}
		_, err = e.m.CallTool(t.Context(), "editor_echo", json.RawMessage(`{"text":"hi"}`), CallInfo{SessionID: "ses_0000000000000000000000000c"})
		if !errs.Is(err, errs.NotFound) {
			t.Fatalf("another session's call = %v, want NotFound", err)
		}
	})
	t.Run("a session's server is not stored, so no restart brings it back", func(t *testing.T) {
		rows, err := db.MCPServers(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Name != "project" {
			t.Fatalf("stored: %+v", rows)
		}
	})

	clashes := []struct {
		name string
		add  func() error
	}{
		{"a session's server named like a project server is refused", func() error {
			_, err := e.m.AddForSession(t.Context(), a, "project", cfgProject)
			return err
		}},
		{"a project server named like a session's server is refused", func() error {
			_, err := e.m.Add(t.Context(), "editor", cfgProject)
			return err
		}},
		{"a project server named as a session's server is listed is refused", func() error {
			_, err := e.m.Add(t.Context(), "editor@"+a, cfgProject)
			return err
		}},
	}
	for _, tt := range clashes {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.add()
			if !errs.Is(err, errs.Conflict) {
				t.Fatalf("got %v, want Conflict", err)
			}
			if !strings.Contains(err.Error(), "editor") && !strings.Contains(err.Error(), "project") {
				t.Fatalf("the error does not name the clash: %v", err)
			}
			if st := e.m.Status(); st["project"].Status != Connected || st["project"].SessionID != "" || st["editor@"+a].Status != Connected {
				t.Fatalf("a refused add changed the servers: %+v", st)
			}
		})
	}
	t.Run("a malformed session ID is refused", func(t *testing.T) {
		if _, err := e.m.AddForSession(t.Context(), "nope", "x", cfgA); !errs.Is(err, errs.Invalid) {
			t.Fatalf("got %v, want Invalid", err)
		}
	})

	t.Run("ending a session stops its servers and leaves the others", func(t *testing.T) {
		pid := serverPID(t, pidA)
		e.m.EndSession(a)
		ev := e.waitEvent(t, "mcp.server.removed", func(p map[string]any) bool { return p["server"] == "editor@"+a })
		if ev.Properties["sessionID"] != a {
			t.Fatalf("removed event: %s", ev.Raw)
		}
		st := e.m.Status()
		if _, ok := st["editor@"+a]; ok || st["editor@"+b].Status != Connected || st["project"].Status != Connected {
			t.Fatalf("status after the session ended: %+v", st)
		}
		if got := e.m.SessionToolInfos(a); len(got) != 0 {
			t.Fatalf("still offered: %v", toolNames(got))
		}
		for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the server process %d outlived its session", pid)
			}
		}
		if !alive(serverPID(t, pidB)) {
			t.Fatal("the other session's server process is gone")
		}
	})
	t.Run("a session's server can be removed by the name it is listed under", func(t *testing.T) {
		st, err := e.m.Remove(t.Context(), "editor@"+b)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := st["editor@"+b]; ok {
			t.Fatalf("still listed: %+v", st)
		}
	})
	t.Run("once no session has one, the name is free for a project server", func(t *testing.T) {
		if _, err := e.m.Add(t.Context(), "editor", cfgB); err != nil {
			t.Fatal(err)
		}
	})
}
