package routes_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/door/acpagent/acphttp"
	"github.com/tandem-dev/tandem/internal/door/auth"
	"github.com/tandem-dev/tandem/internal/door/routes"
	"github.com/tandem-dev/tandem/internal/door/server"
	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestTheACPDoorTakesOnlyJSON(t *testing.T) {
	acp := acphttp.New(t.Context(), acphttp.Options{Client: func() *client.Client { return client.New("http://127.0.0.1:1", apiUser, "") }})
	a := auth.New(auth.Credentials{Username: apiUser, Password: apiPassword})
	srv, err := server.Listen(server.Config{
		Port: testenv.UnusedPort(t), Directory: t.TempDir(), Auth: a, PasswordSet: true,
		API: &routes.API{Modules: []routes.Module{&routes.ACPServer{Handler: acp}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
		defer cancel()
		acp.Close()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		testenv.Recv(t, srv.Done(), "server shutdown")
	})
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`
	for _, c := range []struct {
		name        string
		contentType string
		want        int
	}{
		{"a text/plain initialize is refused with 415", "text/plain", http.StatusUnsupportedMediaType},
		{"a form-encoded initialize is refused with 415", "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"an initialize without a Content-Type is refused with 415", "", http.StatusUnsupportedMediaType},
		{"a JSON initialize opens a connection", "application/json", http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+strings.TrimPrefix(routes.ACPServerPath, "/"), strings.NewReader(initialize))
			if err != nil {
				t.Fatal(err)
			}
			req.SetBasicAuth(apiUser, apiPassword)
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != c.want {
				t.Fatalf("POST /acp as %q: %d, want %d", c.contentType, res.StatusCode, c.want)
			}
			if c.want == http.StatusOK {
				if res.Header.Get(acphttp.HeaderConnection) == "" {
					t.Fatal("a JSON initialize was answered without a connection")
				}
				return
			}
			if got := res.Header.Get(acphttp.HeaderConnection); got != "" {
				t.Fatalf("a refused initialize opened connection %s", got)
			}
		})
	}
}
