//go:build unix

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTheLimitReplaysAServersAnswer(t *testing.T) {
	dir := t.TempDir()
	body := filepath.Join(dir, "answer.json")
	head := filepath.Join(dir, "answer.head")
	writeFile(t, body, `[{"id":"ses_1"}]`)
	// As curl -D writes it: CRLF line ends, the blank line at the end.
	writeFile(t, head, "HTTP/1.1 200 OK\r\nContent-Length: 3091\r\nContent-Type: application/json\r\n"+
		"Link: </session?before=abc&limit=10>; rel=\"next\"\r\nVary: Origin, Accept-Encoding\r\n"+
		"X-Next-Cursor: abc\r\nDate: Sat, 28 Nov 2026 11:13:06 GMT\r\n\r\n")

	t.Run("with a head file it sends that head and that body, with its own length and date", func(t *testing.T) {
		ans, err := limitAnswer(body, head)
		if err != nil {
			t.Fatal(err)
		}
		res, got := getSession(t, ans)
		if string(got) != `[{"id":"ses_1"}]` || res.ContentLength != int64(len(got)) {
			t.Fatalf("body %q, length %d", got, res.ContentLength)
		}
		for k, want := range map[string]string{
			"Content-Type": "application/json", "Link": `</session?before=abc&limit=10>; rel="next"`,
			"Vary": "Origin, Accept-Encoding", "X-Next-Cursor": "abc",
		} {
			if got := res.Header.Values(k); len(got) != 1 || got[0] != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		if res.Header.Get("Date") == "Sat, 28 Nov 2026 11:13:06 GMT" {
			t.Error("the recorded Date was replayed; the limit's own belongs there")
		}
	})

	t.Run("with a body file alone it sends that body as JSON and nothing of the head", func(t *testing.T) {
		ans, err := limitAnswer(body, "")
		if err != nil {
			t.Fatal(err)
		}
		res, got := getSession(t, ans)
		if string(got) != `[{"id":"ses_1"}]` || res.Header.Get("Content-Type") != "application/json" || res.Header.Get("Link") != "" {
			t.Fatalf("body %q, head %v", got, res.Header)
		}
	})

	t.Run("with neither it sends 2 KB of JSON", func(t *testing.T) {
		ans, err := limitAnswer("", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, got := getSession(t, ans); len(got) != 2048 {
			t.Fatalf("%d bytes", len(got))
		}
	})

	t.Run("a head without a body is refused", func(t *testing.T) {
		if _, err := limitAnswer("", head); err == nil || !strings.Contains(err.Error(), "-limit-body") {
			t.Fatalf("err %v", err)
		}
	})

	t.Run("a file that is not a response head is refused and says what it is not", func(t *testing.T) {
		if _, err := limitAnswer(body, body); err == nil || !strings.Contains(err.Error(), "not a response head") {
			t.Fatalf("err %v", err)
		}
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// getSession serves ans with the limit server on a loopback port and asks it GET /session.
func getSession(t *testing.T, ans answer) (*http.Response, []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- serveLimit(ctx, addr, ans) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("limit server: %v", err)
		}
	})
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := client.Get("http://" + addr + "/session?limit=10")
		if err == nil {
			defer res.Body.Close()
			got, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			return res, got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the limit server never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
