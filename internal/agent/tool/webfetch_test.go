package tool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// loopbackServer serves handler on 127.0.0.1 and records the headers of every request.
type loopbackServer struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func serveLoopback(t *testing.T, handler http.HandlerFunc) *loopbackServer {
	t.Helper()
	s := &loopbackServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *loopbackServer) requests() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.headers)
}

// localhostURL is the server's URL under the name localhost: another host to ask for than 127.0.0.1.
func (s *loopbackServer) localhostURL(t *testing.T) string {
	t.Helper()
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return "http://localhost:" + port
}

const page = `<!doctype html><html><head><title>Doc</title><style>body{color:red}</style><script>var secret = 1;</script></head>
<body><h1>Config loader</h1><p>It reads <strong>tandem.json</strong> and <a href="/more">more</a>.</p><ul><li>one</li><li>two</li></ul></body></html>`

func TestWebFetchAsksForTheHostAndReturnsMarkdown(t *testing.T) {
	srv := serveLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "abc"})
		fmt.Fprint(w, page)
	})
	for _, tt := range []struct {
		format string
		want   []string
		not    []string
	}{
		{"markdown", []string{"# Config loader", "**tandem.json**", "[more](" + srv.URL + "/more)", "- one"}, []string{"secret", "color:red"}},
		{"text", []string{"Config loader", "It reads tandem.json and more."}, []string{"secret", "color:red", "<h1>"}},
		{"html", []string{"<h1>Config loader</h1>", "var secret"}, nil},
	} {
		t.Run("format "+tt.format+" asks once for 127.0.0.1", func(t *testing.T) {
			call, gate := newCall(t, projectDir(t), map[string]any{"url": srv.URL + "/doc", "format": tt.format})
			res := mustRun(t, WebFetch{}, call)
			asks := gate.asked()
			if len(asks) != 1 || asks[0].Permission != "webfetch" || !slices.Equal(asks[0].Patterns, []string{"127.0.0.1"}) || !slices.Equal(asks[0].Always, []string{"127.0.0.1"}) {
				t.Fatalf("asks = %+v, want one webfetch ask for 127.0.0.1", asks)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output lacks %q:\n%s", w, res.Output)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(res.Output, n) {
					t.Errorf("output has %q:\n%s", n, res.Output)
				}
			}
		})
	}
	// A second fetch sends no cookie the first one was given, and never anything of tandem's.
	call, _ := newCall(t, projectDir(t), map[string]any{"url": srv.URL + "/again"})
	mustRun(t, WebFetch{}, call)
	for _, h := range srv.requests() {
		for _, name := range []string{"Cookie", "Authorization", "Proxy-Authorization"} {
			if v := h.Get(name); v != "" {
				t.Errorf("a request carried %s: %q", name, v)
			}
		}
	}
}

func TestWebFetchRefusesWhatIsNotAWebURL(t *testing.T) {
	for _, raw := range []string{"file:///etc/passwd", "javascript:alert(1)", "ftp://example.com/x", "data:text/html,hi", "example.com/no-scheme", "http://user:pw@127.0.0.1/", "http:///nohost"} {
		t.Run(raw+" is refused without asking", func(t *testing.T) {
			call, gate := newCall(t, projectDir(t), map[string]any{"url": raw})
			_, err := WebFetch{}.Run(context.Background(), call)
			if err == nil || !strings.Contains(err.Error(), "url") {
				t.Fatalf("Run = %v, want a refusal", err)
			}
			if len(gate.asked()) != 0 {
				t.Fatalf("asked %+v", gate.asked())
			}
		})
	}
}

func TestWebFetchCutsALargePage(t *testing.T) {
	const size = 10 << 20
	srv := serveLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		line := strings.Repeat("x", 99) + "\n"
		for written := 0; written < size; written += len(line) {
			if _, err := fmt.Fprint(w, line); err != nil {
				return // the client stopped reading: it has enough
			}
		}
	})
	call, _ := newCall(t, projectDir(t), map[string]any{"url": srv.URL, "format": "text"})
	res := mustRun(t, WebFetch{}, call)
	if len(res.Output) > 200<<10 {
		t.Fatalf("the output holds %d bytes of a 10 MB page", len(res.Output))
	}
	if !strings.Contains(res.Output, "[webfetch: cut here.") || res.Metadata["truncated"] != true {
		t.Fatalf("no cut marker at the end: %q", res.Output[max(0, len(res.Output)-300):])
	}
}

func TestWebFetchAsksAgainForEachNewHostARedirectLeadsTo(t *testing.T) {
	target := serveLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "arrived")
	})
	redirect := serveLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/final":
			fmt.Fprint(w, "same host")
		case "/other":
			http.Redirect(w, r, target.localhostURL(t)+"/", http.StatusMovedPermanently)
		case "/file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		}
	})
	t.Run("a redirect on the same host asks nothing more", func(t *testing.T) {
		call, gate := newCall(t, projectDir(t), map[string]any{"url": redirect.URL + "/same"})
		res := mustRun(t, WebFetch{}, call)
		if res.Output != "same host" || len(gate.asked()) != 1 {
			t.Fatalf("output %q after asks %+v", res.Output, gate.asked())
		}
	})
	t.Run("a redirect to another host asks for it", func(t *testing.T) {
		call, gate := newCall(t, projectDir(t), map[string]any{"url": redirect.URL + "/other"})
		res := mustRun(t, WebFetch{}, call)
		asks := gate.asked()
		if res.Output != "arrived" || len(asks) != 2 || !slices.Equal(asks[1].Patterns, []string{"localhost"}) {
			t.Fatalf("output %q after asks %+v", res.Output, asks)
		}
	})
	t.Run("a refused redirect host is never contacted", func(t *testing.T) {
		before := len(target.requests())
		call, _ := newCall(t, projectDir(t), map[string]any{"url": redirect.URL + "/other"})
		call.Gate = &hostGate{refuse: "localhost"}
		if _, err := (WebFetch{}).Run(context.Background(), call); !errors.Is(err, errRefused) {
			t.Fatalf("Run = %v, want the refusal", err)
		}
		if len(target.requests()) != before {
			t.Fatal("the refused host was contacted")
		}
	})
	t.Run("a redirect to a file URL is refused", func(t *testing.T) {
		call, _ := newCall(t, projectDir(t), map[string]any{"url": redirect.URL + "/file"})
		if _, err := (WebFetch{}).Run(context.Background(), call); err == nil || !strings.Contains(err.Error(), "only http and https") {
			t.Fatalf("Run = %v", err)
		}
	})
}

// hostGate refuses webfetch for one host and allows everything else.
type hostGate struct{ refuse string }

func (g *hostGate) Check(_ context.Context, ask Ask) error {
	if ask.Permission == "webfetch" && slices.Contains(ask.Patterns, g.refuse) {
		return errRefused
	}
	return nil
}

func TestWebFetchGivesUpAtItsTimeout(t *testing.T) {
	srv := serveLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; returns when the client goes away
	})
	call, _ := newCall(t, projectDir(t), map[string]any{"url": srv.URL, "timeout": 1})
	_, err := WebFetch{}.Run(context.Background(), call)
	if err == nil || !strings.Contains(err.Error(), "timed out after 1s") {
		t.Fatalf("Run = %v, want a timeout", err)
	}
}

func TestWebFetchRefusesBinaryContent(t *testing.T) {
	srv := serveLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG\r\n\x1a\n"))
	})
	call, _ := newCall(t, projectDir(t), map[string]any{"url": srv.URL})
	if _, err := (WebFetch{}).Run(context.Background(), call); err == nil || !strings.Contains(err.Error(), "image/png") {
		t.Fatalf("Run = %v", err)
	}
}
