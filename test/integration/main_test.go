package integration

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-dev/tandem/internal/agent/session"
	"github.com/tandem-dev/tandem/internal/app"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// TestServePrintsCredentialsThatWork runs `tandem serve` as a user would and uses what it printed.
func TestServePrintsCredentialsThatWork(t *testing.T) {
	td := newTandem(t, setup{})
	state := t.TempDir()
	cmd := exec.Command(builtBinary(t), "serve", "--port", strconv.Itoa(testenv.UnusedPort(t)), "--dir", td.project, "--data-dir", td.data)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "XDG_CONFIG_HOME="+td.env["XDG_CONFIG_HOME"],
		"TANDEM_SERVER_PASSWORD=", "TANDEM_SERVER_USERNAME=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // only a server the test did not stop is still running here
		testenv.Recv(t, exited, "the server exiting")
	})

	lines := bufio.NewScanner(out)
	var url, user, password string
	listening := regexp.MustCompile(`listening on (http://\S+/)`)
	creds := regexp.MustCompile(`user: (\S+)\s+password: (\S+)`)
	for password == "" && lines.Scan() {
		if m := listening.FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
		}
		if m := creds.FindStringSubmatch(lines.Text()); m != nil {
			user, password = m[1], m[2]
		}
	}
	if url == "" || password == "" {
		t.Fatalf("serve printed no URL or password (url %q)", url)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	res, err := client.Get(url + "global/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"healthy":true`) {
		t.Fatalf("health: %d %s", res.StatusCode, body)
	}

	post := func(u, p string) int {
		req, _ := http.NewRequest(http.MethodPost, url+"session", strings.NewReader(`{"title":"from the CLI"}`))
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(u, p)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if status := post(user, password); status != 200 {
		t.Fatalf("POST /session with the printed credentials: %d", status)
	}
	if status := post(user, password+"x"); status != 401 {
		t.Fatalf("POST /session with a wrong password: %d", status)
	}

	// The state file local clients read: the URL and credentials, readable by the owner only.
	statePath := filepath.Join(state, "tandem", "server.json")
	fi, err := os.Stat(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(statePath)
	var st struct{ URL, Username, Password string }
	if err := json.Unmarshal(raw, &st); err != nil || st.URL != url || st.Password != password || st.Username != user {
		t.Errorf("state file %s", raw)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("serve ended with %v", waitErr)
		}
	case <-time.After(waitLimit):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if _, err := os.Stat(statePath); !os.IsNotExist(err) {
		t.Errorf("the state file outlived the server: %v", err)
	}
}

func TestStartRefusesUnsafeBinds(t *testing.T) {
	tests := []struct {
		name    string
		opts    app.Options
		env     map[string]string
		wantErr string
	}{
		{"--no-auth off loopback", app.Options{Hostname: "0.0.0.0", NoAuth: true}, nil, "--no-auth"},
		{"a non-loopback bind without a password the user set", app.Options{Hostname: "0.0.0.0"}, nil, "TANDEM_SERVER_PASSWORD"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			td := newTandem(t, setup{})
			o := tt.opts
			o.Port, o.Directory = testenv.UnusedPort(t), td.project
			o.Paths = app.Paths{Data: td.data, State: td.data, Config: td.data}
			o.Env = func(k string) string { return tt.env[k] }
			m, err := app.Start(context.Background(), o)
			if err == nil {
				m.Close()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestSessionsPersistAcrossARestart(t *testing.T) {
	td := startTandem(t, setup{})
	var created []session.Session
	for i := range 3 {
		var s session.Session
		td.call(t, http.MethodPost, "/session", fmt.Sprintf(`{"title":"persisted %d"}`, i), http.StatusOK, &s)
		created = append(created, s)
	}
	var child session.Session
	td.call(t, http.MethodPost, "/session", `{"parentID":"`+created[0].ID+`"}`, http.StatusOK, &child)
	var renamed session.Session
	td.call(t, http.MethodPatch, "/session/"+created[1].ID, `{"title":"renamed before the restart"}`, http.StatusOK, &renamed)
	var before []session.Session
	td.call(t, http.MethodGet, "/session", "", http.StatusOK, &before)

	td.restart(t)

	var after []session.Session
	td.call(t, http.MethodGet, "/session", "", http.StatusOK, &after)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Fatalf("the listing changed across the restart (-before +after):\n%s", diff)
	}
	var got session.Session
	td.call(t, http.MethodGet, "/session/"+created[1].ID, "", http.StatusOK, &got)
	if diff := cmp.Diff(renamed, got); diff != "" {
		t.Errorf("the renamed session changed (-before +after):\n%s", diff)
	}
	var children []session.Session
	td.call(t, http.MethodGet, "/session/"+created[0].ID+"/children", "", http.StatusOK, &children)
	if len(children) != 1 || children[0].ID != child.ID {
		t.Errorf("children after the restart: %+v", children)
	}
	// The new boot writes as well as it reads.
	td.call(t, http.MethodDelete, "/session/"+created[2].ID, "", http.StatusOK, nil)
	td.call(t, http.MethodGet, "/session/"+created[2].ID, "", http.StatusNotFound, nil)
}

// TestGracefulShutdown closes the server while an SSE client listens and a request is half sent:
// the listener gets a final server.shutdown frame and the request is answered.
func TestGracefulShutdown(t *testing.T) {
	td := newTandem(t, setup{})
	td.start(t)
	host := strings.TrimPrefix(td.base, "http://")

	// An EventSource-style client: credentials in ?auth_token=.
	token := base64.StdEncoding.EncodeToString([]byte(testUser + ":" + testPassword))
	res, err := td.client.Get(td.base + "/event?auth_token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET /event: %d", res.StatusCode)
	}
	frames := bufio.NewScanner(res.Body)
	nextData := func() string {
		t.Helper()
		for frames.Scan() {
			if d, ok := strings.CutPrefix(frames.Text(), "data: "); ok {
				return d
			}
		}
		t.Fatalf("the stream ended: %v", frames.Err())
		return ""
	}
	if d := nextData(); !strings.Contains(d, `"type":"server.connected"`) {
		t.Fatalf("first frame %s", d)
	}

	// A POST whose handler is already reading its body when the shutdown begins: the server's
	// "100 Continue" says the handler asked for the body.
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(waitLimit))
	replies := bufio.NewReader(conn)
	body := `{"title":"in flight"}`
	fmt.Fprintf(conn, "POST /session HTTP/1.1\r\nHost: %s\r\nAuthorization: Basic %s\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n",
		host, token, len(body))
	if cont, err := http.ReadResponse(replies, nil); err != nil || cont.StatusCode != http.StatusContinue {
		t.Fatalf("want 100 Continue, got %v %v", cont, err)
	}
	if _, err := io.WriteString(conn, body[:7]); err != nil {
		t.Fatal(err)
	}

	closed := make(chan error, 1)
	go func() { closed <- td.m.Close() }()

	if d := nextData(); !strings.Contains(d, `"type":"server.shutdown"`) {
		t.Fatalf("the SSE client's last frame was %s, want server.shutdown", d)
	}
	testenv.Eventually(t, "the listener to close", func() bool {
		c, err := net.DialTimeout("tcp", host, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a request was in flight", err)
	default:
	}

	if _, err := io.WriteString(conn, body[7:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(replies, nil)
	if err != nil {
		t.Fatalf("the in-flight request got no answer: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(answer), `"title":"in flight"`) {
		t.Fatalf("in-flight request: %d %s", resp.StatusCode, answer)
	}
	if err, _ := testenv.Recv(t, closed, "Close returning"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	td.m = nil

	// What the in-flight request created was stored before the database closed.
	td.start(t)
	defer td.stop(t)
	var list []session.Session
	td.call(t, http.MethodGet, "/session", "", http.StatusOK, &list)
	if len(list) != 1 || list[0].Title != "in flight" {
		t.Errorf("after the restart: %+v", list)
	}
}
