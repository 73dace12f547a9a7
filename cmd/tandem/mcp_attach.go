package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// attachTarget is where `tandem mcp --attach` relays to: the server's MCP endpoint and its credentials.
type attachTarget struct {
	endpoint string
	username string
	password string
}

// resolveAttach turns the --attach value into an endpoint with credentials. The credentials come, in
// order, from the URL's user info, from TANDEM_SERVER_USERNAME/TANDEM_SERVER_PASSWORD, or from the
// state file a local `tandem serve` writes (only when it describes the same server). An empty value
// means "the local server": the state file's URL.
func resolveAttach(raw string, getenv func(string) string, stateDir string) (attachTarget, error) {
	st, stErr := readState(stateDir)
	if raw == "" || raw == "local" {
		if stErr != nil {
			return attachTarget{}, fmt.Errorf("--attach: no URL given and no local server found (%v); start `tandem serve` or pass its URL", stErr)
		}
		raw = st.URL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return attachTarget{}, fmt.Errorf("--attach %q: expected the server's http(s) URL, e.g. http://127.0.0.1:4096", raw)
	}
	t := attachTarget{username: "tandem"}
	switch {
	case u.User != nil:
		t.username = u.User.Username()
		t.password, _ = u.User.Password()
	case getenv("TANDEM_SERVER_PASSWORD") != "":
		t.password = getenv("TANDEM_SERVER_PASSWORD")
		if v := getenv("TANDEM_SERVER_USERNAME"); v != "" {
			t.username = v
		}
	case stErr == nil && sameServer(st.URL, u):
		t.username, t.password = st.Username, st.Password
	}
	u.User = nil
	if !strings.HasSuffix(u.Path, "/mcp-server") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/mcp-server"
	}
	t.endpoint = u.String()
	return t, nil
}

func readState(dir string) (state, error) {
	var st state
	body, err := os.ReadFile(filepath.Join(dir, "server.json"))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("%s: %w", filepath.Join(dir, "server.json"), err)
	}
	return st, nil
}

func sameServer(stateURL string, u *url.URL) bool {
	s, err := url.Parse(stateURL)
	return err == nil && s.Scheme == u.Scheme && s.Host == u.Host
}

// basicAuth adds the server's credentials to every request of the relay.
type basicAuth struct {
	user, password string
	next           http.RoundTripper
}

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.password == "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.password)
	return b.next.RoundTrip(r)
}

// relayMCP passes MCP messages both ways between a local transport (stdio) and a remote one (the
// server's Streamable HTTP endpoint) until either side ends. It relays at the JSON-RPC level, so
// everything the server does — elicitations, progress, cancellation, newer protocol versions — reaches
// the client unchanged. Calls are forwarded each on its own: a long tools/call must not hold back the
// client's answer to an elicitation that call is waiting for.
func relayMCP(ctx context.Context, local, remote mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lc, err := local.Connect(ctx)
	if err != nil {
		return err
	}
	defer lc.Close()
	rc, err := remote.Connect(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()

	var calls sync.WaitGroup
	defer calls.Wait()
	errc := make(chan error, 2)
	go func() {
		for {
			msg, err := lc.Read(ctx)
			if err != nil {
				errc <- err
				return
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				calls.Add(1)
				go func() {
					defer calls.Done()
					if err := rc.Write(ctx, req); err != nil && ctx.Err() == nil {
						// The client must not wait forever for a call that never reached the server.
						_ = lc.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tandem mcp --attach: " + err.Error()}})
					}
				}()
				continue
			}
			if err := rc.Write(ctx, msg); err != nil {
				errc <- err
				return
			}
		}
	}()
	go func() {
		for {
			msg, err := rc.Read(ctx)
			if err == nil {
				err = lc.Write(ctx, msg)
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	err = <-errc
	cancel()
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil // the client went away: a normal end
	}
	return err
}
