package routes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/infra/store"
)

// shapeOf reduces a JSON value to its skeleton: the keys of objects and the types of leaves.
func shapeOf(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = shapeOf(e)
		}
		return out
	case []any:
		if len(v) == 0 {
			return []any{}
		}
		return []any{shapeOf(v[0])}
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func jsonShape(tb testing.TB, b []byte) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("not JSON: %s", b)
	}
	return shapeOf(v)
}

func sampleShape(tb testing.TB, name string) any {
	tb.Helper()
	// Copies of OpenCode 1.18.33's responses (reference/opencode/samples).
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatalf("sample %s: %v", name, err)
	}
	return jsonShape(tb, b)
}

var sessionIDPattern = regexp.MustCompile(`^ses_[0-9a-f]{12}[0-9A-Za-z]{14}$`)

func TestSessionsHaveOpenCodesShapes(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	_, _, created := s.send(t, s.newRequest(t, http.MethodPost, "/session", `{"title":"sample session"}`))
	var sess session.Session
	if err := json.Unmarshal(created, &sess); err != nil {
		t.Fatal(err)
	}
	if !sessionIDPattern.MatchString(sess.ID) {
		t.Errorf("session ID %q does not look like OpenCode's", sess.ID)
	}
	_, _, got := s.send(t, s.newRequest(t, http.MethodGet, "/session/"+sess.ID, ""))
	_, _, list := s.send(t, s.newRequest(t, http.MethodGet, "/session", ""))
	_, _, fork := s.send(t, s.newRequest(t, http.MethodPost, "/session/"+sess.ID+"/fork", `{}`))

	tests := []struct {
		name, sample string
		body         []byte
	}{
		{"POST /session answers the shape of session_create.json", "session_create.json", created},
		{"GET /session/{id} of a fresh session answers the same shape", "session_create.json", got},
		{"GET /session answers an array of that shape", "session_create.json", nil},
		{"POST /session/{id}/fork answers the shape of session_fork.json", "session_fork.json", fork},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := sampleShape(t, tt.sample)
			body := tt.body
			if body == nil {
				var items []json.RawMessage
				if err := json.Unmarshal(list, &items); err != nil || len(items) != 1 {
					t.Fatalf("list %s: %v", list, err)
				}
				body = items[0]
			}
			if diff := cmp.Diff(want, jsonShape(t, body)); diff != "" {
				t.Errorf("shape differs from %s (-opencode +tandem):\n%s\nbody: %s", tt.sample, diff, body)
			}
		})
	}
	t.Run("every field of a session is typed as in session_get.json", func(t *testing.T) {
		full := sampleShape(t, "session_get.json").(map[string]any)
		for k, v := range jsonShape(t, got).(map[string]any) {
			if !cmp.Equal(full[k], v) {
				t.Errorf("field %s: tandem %v, OpenCode %v", k, v, full[k])
			}
		}
	})
}

func TestSessionCRUD(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	empty := s.createSession(t, "")
	if !strings.HasPrefix(empty.Title, "New session - ") || empty.Directory != s.dir || empty.Time.Created == 0 || empty.Time.Updated != empty.Time.Created {
		t.Errorf("a session created with no body: %+v", empty)
	}
	named := s.createSession(t, `{"title":"named"}`)
	child := s.createSession(t, `{"parentID":"`+named.ID+`"}`)
	if child.ParentID != named.ID || !strings.HasPrefix(child.Title, "Child session - ") {
		t.Errorf("child: %+v", child)
	}

	var got session.Session
	s.call(t, http.MethodGet, "/session/"+named.ID, "", http.StatusOK, &got)
	if got.ID != named.ID || got.Title != "named" {
		t.Errorf("GET: %+v", got)
	}

	var updated session.Session
	s.call(t, http.MethodPatch, "/session/"+named.ID, `{"title":"renamed","time":{"archived":42}}`, http.StatusOK, &updated)
	if updated.Title != "renamed" || updated.Time.Archived != 42 || updated.Time.Updated < named.Time.Updated {
		t.Errorf("PATCH: %+v", updated)
	}
	s.call(t, http.MethodGet, "/session/"+named.ID, "", http.StatusOK, &got)
	if got.Title != "renamed" {
		t.Errorf("the rename was not stored: %+v", got)
	}

	var children []session.Session
	s.call(t, http.MethodGet, "/session/"+named.ID+"/children", "", http.StatusOK, &children)
	if len(children) != 1 || children[0].ID != child.ID {
		t.Errorf("children: %+v", children)
	}

	var roots []session.Session
	s.call(t, http.MethodGet, "/session?roots=true", "", http.StatusOK, &roots)
	if len(roots) != 2 {
		t.Errorf("roots: %d sessions, want 2", len(roots))
	}
	var found []session.Session
	s.call(t, http.MethodGet, "/session?search=RENAM", "", http.StatusOK, &found)
	if len(found) != 1 || found[0].ID != named.ID {
		t.Errorf("search: %+v", found)
	}
	s.call(t, http.MethodGet, "/session?search="+strings.Repeat("a", 50000), "", http.StatusBadRequest, nil)

	var deleted bool
	s.call(t, http.MethodDelete, "/session/"+empty.ID, "", http.StatusOK, &deleted)
	if !deleted {
		t.Error("DELETE answered false")
	}
	_, h, body := s.send(t, s.newRequest(t, http.MethodGet, "/session/"+empty.ID, ""))
	if e := requireErrorShape(t, h, body); e.Name != "NotFoundError" {
		t.Errorf("GET after DELETE: %s", body)
	}
}

func TestSessionsAreScopedToTheirDirectory(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	other := t.TempDir()
	s.createSession(t, `{"title":"here"}`)
	var there session.Session
	s.call(t, http.MethodPost, "/session?directory="+url.QueryEscape(other), `{"title":"there"}`, http.StatusOK, &there)
	if there.Directory != other {
		t.Errorf("directory = %q, want %q", there.Directory, other)
	}
	req := s.newRequest(t, http.MethodGet, "/session", "")
	req.Header.Set("x-opencode-directory", url.PathEscape(other))
	_, _, body := s.send(t, req)
	var listed []session.Session
	if err := json.Unmarshal(body, &listed); err != nil || len(listed) != 1 || listed[0].Title != "there" {
		t.Errorf("listing with x-opencode-directory: %s", body)
	}
}

func TestBadInputGetsItsStatusAndTheOneErrorShape(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	sess := s.createSession(t, `{"title":"victim"}`)
	unknownSession := id.NewSource().NewDescending(id.Session)
	unknownMessage := id.NewSource().New(id.Message)
	tooBig := `{"title":"` + strings.Repeat("x", routes.MaxBody) + `"}`

	tests := []struct {
		name                string
		method, path, ctype string
		body                string
		want                int
	}{
		{"a malformed session ID is 400", "GET", "/session/not-a-session", "", "", 400},
		{"a message ID in the session slot is 400", "GET", "/session/" + unknownMessage, "", "", 400},
		{"a malformed message ID is 400", "GET", "/session/" + sess.ID + "/message/nope", "", "", 400},
		{"a malformed parentID is 400", "POST", "/session", "application/json", `{"parentID":"bogus"}`, 400},
		{"a limit that is not a number is 400", "GET", "/session?limit=ten", "", "", 400},
		{"a limit above the maximum is 400", "GET", "/session?limit=5000", "", "", 400},
		{"roots that is not a boolean is 400", "GET", "/session?roots=maybe", "", "", 400},
		{"a start that is not a number is 400", "GET", "/session?start=yesterday", "", "", 400},
		{"a cursor the server never issued is 400", "GET", "/session?before=garbage", "", "", 400},
		{"a negative message limit is 400", "GET", "/session/" + sess.ID + "/message?limit=-1", "", "", 400},
		{"a forged message cursor is 400", "GET", "/session/" + sess.ID + "/message?limit=1&before=e30", "", "", 400},
		{"a relative directory is 400", "GET", "/session?directory=relative/dir", "", "", 400},
		{"a directory that does not exist is 400", "GET", "/session?directory=/does/not/exist", "", "", 400},
		{"malformed JSON is 400", "POST", "/session", "application/json", `{"title":`, 400},
		{"a field of the wrong type is 400", "POST", "/session", "application/json", `{"title":5}`, 400},
		{"trailing data after the JSON value is 400", "POST", "/session", "application/json", `{} {}`, 400},
		{"an unknown session is 404", "GET", "/session/" + unknownSession, "", "", 404},
		{"updating an unknown session is 404", "PATCH", "/session/" + unknownSession, "application/json", `{"title":"x"}`, 404},
		{"deleting an unknown session is 404", "DELETE", "/session/" + unknownSession, "", "", 404},
		{"forking an unknown session is 404", "POST", "/session/" + unknownSession + "/fork", "application/json", `{}`, 404},
		{"the messages of an unknown session are 404", "GET", "/session/" + unknownSession + "/message", "", "", 404},
		{"an unknown message is 404", "GET", "/session/" + sess.ID + "/message/" + unknownMessage, "", "", 404},
		{"a child of an unknown parent is 404", "POST", "/session", "application/json", `{"parentID":"` + unknownSession + `"}`, 404},
		{"an unknown route is 404", "GET", "/no/such/route", "", "", 404},
		{"an unknown route under /session is 404", "GET", "/session/" + sess.ID + "/nothing-here", "", "", 404},
		{"a wrong method is 405", "DELETE", "/global/health", "", "", 405},
		{"a body over MaxBody is 413", "POST", "/session", "application/json", tooBig, 413},
		{"a text/plain body is 415", "POST", "/session", "text/plain", `{"title":"x"}`, 415},
		{"a form body is 415", "POST", "/session", "application/x-www-form-urlencoded", `title=x`, 415},
		{"a JSON body without a Content-Type is 415", "POST", "/session", "", `{"title":"x"}`, 415},
		{"text/plain is 415 even where no body is expected", "POST", "/session/" + sess.ID + "/abort", "text/plain", "", 415},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := s.newRequest(t, tt.method, tt.path, "")
			if tt.body != "" {
				req = s.newRequest(t, tt.method, tt.path, tt.body)
				req.Header.Del("Content-Type")
			}
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			status, h, body := s.send(t, req)
			if status != tt.want {
				t.Fatalf("status %d, want %d; body %.300s", status, tt.want, body)
			}
			requireErrorShape(t, h, body)
		})
	}

	var all []session.Session
	s.call(t, http.MethodGet, "/session", "", http.StatusOK, &all)
	if len(all) != 1 || all[0].Title != "victim" {
		t.Errorf("bad requests changed state: %d sessions", len(all))
	}
}

// nextPage returns the Link rel="next" target and checks it agrees with x-next-cursor.
func nextPage(t *testing.T, h http.Header) string {
	t.Helper()
	link, cursor := h.Get("Link"), h.Get("x-next-cursor")
	if (link == "") != (cursor == "") {
		t.Fatalf("Link %q and x-next-cursor %q disagree", link, cursor)
	}
	if link == "" {
		return ""
	}
	m := regexp.MustCompile(`^<([^>]+)>; rel="next"$`).FindStringSubmatch(link)
	if m == nil {
		t.Fatalf("Link header %q is not <url>; rel=\"next\"", link)
	}
	u, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if u.Query().Get("before") != cursor {
		t.Fatalf("Link %q does not carry x-next-cursor %q", link, cursor)
	}
	return m[1]
}

func TestSessionListPagingNeverTruncatesSilently(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	created := map[string]bool{}
	for i := range 150 {
		created[s.createSession(t, fmt.Sprintf(`{"title":"s%03d"}`, i)).ID] = true
	}

	t.Run("the default page is 100 and points to the rest", func(t *testing.T) {
		var page []session.Session
		h := s.call(t, http.MethodGet, "/session", "", http.StatusOK, &page)
		if len(page) != 100 {
			t.Fatalf("first page has %d sessions, want 100", len(page))
		}
		next := nextPage(t, h)
		if next == "" {
			t.Fatal("150 sessions, 100 returned, and no Link to the rest")
		}
		var rest []session.Session
		h = s.call(t, http.MethodGet, next, "", http.StatusOK, &rest)
		if len(rest) != 50 || nextPage(t, h) != "" {
			t.Errorf("second page: %d sessions, next %q", len(rest), h.Get("Link"))
		}
	})

	for _, limit := range []int{1, 7, 40, 150, 1000} {
		t.Run(fmt.Sprintf("following Link with limit %d visits every session once, newest first", limit), func(t *testing.T) {
			seen := map[string]int{}
			var order []session.Session
			next, pages := fmt.Sprintf("/session?limit=%d", limit), 0
			for next != "" {
				var page []session.Session
				h := s.call(t, http.MethodGet, next, "", http.StatusOK, &page)
				if len(page) > limit {
					t.Fatalf("page of %d with limit %d", len(page), limit)
				}
				for _, p := range page {
					seen[p.ID]++
				}
				order = append(order, page...)
				next = nextPage(t, h)
				if pages++; pages > 200 {
					t.Fatal("paging does not end")
				}
			}
			if len(seen) != 150 || len(order) != 150 {
				t.Fatalf("saw %d distinct of %d listed, want 150", len(seen), len(order))
			}
			for id, n := range seen {
				if n != 1 || !created[id] {
					t.Errorf("session %s listed %d times (created here: %v)", id, n, created[id])
				}
			}
			for i := 1; i < len(order); i++ {
				if order[i].Time.Updated > order[i-1].Time.Updated {
					t.Fatalf("not newest first at %d", i)
				}
			}
		})
	}

	t.Run("x-next-cursor alone pages as well as Link", func(t *testing.T) {
		total, cursor := 0, ""
		for {
			var page []session.Session
			h := s.call(t, http.MethodGet, "/session?limit=60&before="+url.QueryEscape(cursor), "", http.StatusOK, &page)
			total += len(page)
			if cursor = h.Get("x-next-cursor"); cursor == "" {
				break
			}
		}
		if total != 150 {
			t.Errorf("x-next-cursor paging saw %d sessions, want 150", total)
		}
	})
}

// seedMessages stores n user messages with one text part each, one millisecond apart.
func seedMessages(t *testing.T, db *store.DB, sessionID string, n int) []session.WithParts {
	t.Helper()
	ids := id.NewSource()
	var out []session.WithParts
	for i := range n {
		text := fmt.Sprintf("message %d", i)
		msg := session.Message{ID: ids.New(id.Message), SessionID: sessionID, Role: session.RoleUser, Agent: "build",
			Time: session.MessageTime{Created: 1_700_000_000_000 + int64(i)}}
		part := session.Part{ID: ids.New(id.Part), SessionID: sessionID, MessageID: msg.ID, Type: "text", Text: &text}
		md, _ := json.Marshal(msg)
		pd, _ := json.Marshal(part)
		if err := db.PutMessage(context.Background(), store.Message{ID: msg.ID, SessionID: sessionID, Created: msg.Time.Created, Data: md}); err != nil {
			t.Fatal(err)
		}
		if err := db.PutPart(context.Background(), store.Part{ID: part.ID, MessageID: msg.ID, SessionID: sessionID, Data: pd}); err != nil {
			t.Fatal(err)
		}
		out = append(out, session.WithParts{Info: msg, Parts: []session.Part{part}})
	}
	return out
}

func texts(page []session.WithParts) []string {
	var out []string
	for _, m := range page {
		for _, p := range m.Parts {
			out = append(out, *p.Text)
		}
	}
	return out
}

func TestMessagePagingWithLimitAndBefore(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	sess := s.createSession(t, `{"title":"chatty"}`)
	msgs := seedMessages(t, s.db, sess.ID, 7)
	base := "/session/" + sess.ID + "/message"

	var all []session.WithParts
	h := s.call(t, http.MethodGet, base, "", http.StatusOK, &all)
	if got := fmt.Sprint(texts(all)); got != "[message 0 message 1 message 2 message 3 message 4 message 5 message 6]" {
		t.Errorf("all messages, oldest first: %s", got)
	}
	if h.Get("Link") != "" {
		t.Errorf("an unlimited listing points to more: %q", h.Get("Link"))
	}

	var pages []string
	next := base + "?limit=3"
	for next != "" {
		var page []session.WithParts
		h := s.call(t, http.MethodGet, next, "", http.StatusOK, &page)
		pages = append(pages, fmt.Sprint(texts(page)))
		next = nextPage(t, h)
	}
	want := []string{"[message 4 message 5 message 6]", "[message 1 message 2 message 3]", "[message 0]"}
	if diff := cmp.Diff(want, pages); diff != "" {
		t.Errorf("pages of 3, newest page first (-want +got):\n%s", diff)
	}

	var one session.WithParts
	s.call(t, http.MethodGet, base+"/"+msgs[2].Info.ID, "", http.StatusOK, &one)
	if one.Info.ID != msgs[2].Info.ID || len(one.Parts) != 1 || *one.Parts[0].Text != "message 2" {
		t.Errorf("GET one message: %+v", one)
	}
}

func TestForkCopiesMessagesAndNumbersTheTitle(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	src := s.createSession(t, `{"title":"sample session"}`)
	msgs := seedMessages(t, s.db, src.ID, 3)

	var fork session.Session
	s.call(t, http.MethodPost, "/session/"+src.ID+"/fork", `{}`, http.StatusOK, &fork)
	if fork.Title != "sample session (fork #1)" || fork.ID == src.ID || fork.ParentID != "" {
		t.Errorf("fork: %+v", fork)
	}
	var copied []session.WithParts
	s.call(t, http.MethodGet, "/session/"+fork.ID+"/message", "", http.StatusOK, &copied)
	if fmt.Sprint(texts(copied)) != "[message 0 message 1 message 2]" {
		t.Errorf("fork messages: %v", texts(copied))
	}
	for i, m := range copied {
		if m.Info.SessionID != fork.ID || m.Info.ID == msgs[i].Info.ID || m.Parts[0].MessageID != m.Info.ID || m.Parts[0].SessionID != fork.ID {
			t.Errorf("copied message %d keeps the original's IDs: %+v", i, m)
		}
	}

	var partial session.Session
	s.call(t, http.MethodPost, "/session/"+src.ID+"/fork", `{"messageID":"`+msgs[2].Info.ID+`"}`, http.StatusOK, &partial)
	if partial.Title != "sample session (fork #2)" {
		t.Errorf("second fork title %q", partial.Title)
	}
	s.call(t, http.MethodGet, "/session/"+partial.ID+"/message", "", http.StatusOK, &copied)
	if fmt.Sprint(texts(copied)) != "[message 0 message 1]" {
		t.Errorf("a fork at message 2 copies the messages before it, got %v", texts(copied))
	}

	var again session.Session
	s.call(t, http.MethodPost, "/session/"+fork.ID+"/fork", `{}`, http.StatusOK, &again)
	if again.Title != "sample session (fork #3)" {
		t.Errorf("a fork of a fork: %q", again.Title)
	}
	var original []session.WithParts
	s.call(t, http.MethodGet, "/session/"+src.ID+"/message", "", http.StatusOK, &original)
	if len(original) != 3 || original[0].Info.ID != msgs[0].Info.ID {
		t.Errorf("forking changed the original: %v", texts(original))
	}
}

func TestDeleteRemovesChildrenAndTheirMessages(t *testing.T) {
	s := startAPIServer(t, apiOptions{})
	parent := s.createSession(t, `{"title":"parent"}`)
	child := s.createSession(t, `{"parentID":"`+parent.ID+`"}`)
	grandchild := s.createSession(t, `{"parentID":"`+child.ID+`"}`)
	bystander := s.createSession(t, `{"title":"bystander"}`)
	seedMessages(t, s.db, child.ID, 2)
	seedMessages(t, s.db, grandchild.ID, 2)

	var ok bool
	s.call(t, http.MethodDelete, "/session/"+parent.ID, "", http.StatusOK, &ok)
	for _, gone := range []string{parent.ID, child.ID, grandchild.ID} {
		status, _, body := s.send(t, s.newRequest(t, http.MethodGet, "/session/"+gone, ""))
		if status != http.StatusNotFound {
			t.Errorf("GET %s after deleting its ancestor: %d %s", gone, status, body)
		}
		msgs, _, err := s.db.ListMessages(context.Background(), store.MessageQuery{SessionID: gone})
		if err != nil || len(msgs) != 0 {
			t.Errorf("%s still has %d messages in the database (%v)", gone, len(msgs), err)
		}
	}
	var left []session.Session
	s.call(t, http.MethodGet, "/session", "", http.StatusOK, &left)
	if len(left) != 1 || left[0].ID != bystander.ID {
		t.Errorf("after the delete: %+v", left)
	}
}
