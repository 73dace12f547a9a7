package integration

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/agent/session"
)

// TestSearchFindsSessionsByWhatWasSaid: GET /session/search finds sessions by the text of their
// conversation (the prompts and the model's answers), not only by title, with a snippet.
func TestSearchFindsSessionsByWhatWasSaid(t *testing.T) {
	td := startTandem(t, setup{})
	first := td.newSession(t)
	td.prompt(t, first, "the deploy uses Kubernetes\nand a Helm chart")
	second := td.newSession(t)
	td.prompt(t, second, "nothing about clusters here")

	search := func(q string) []session.SearchHit {
		t.Helper()
		var hits []session.SearchHit
		td.call(t, http.MethodGet, "/session/search?query="+url.QueryEscape(q), "", http.StatusOK, &hits)
		return hits
	}
	tests := []struct {
		name, query string
		want        []string
	}{
		{name: "a word of a prompt finds its session in any case", query: "kubernetes", want: []string{first}},
		{name: "a word of the model's answer finds it too", query: "You said: nothing", want: []string{second}},
		{name: "a word in both finds both, newest first", query: "You said", want: []string{second, first}},
		{name: "a word nobody said finds nothing", query: "terraform", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, h := range search(tc.query) {
				got = append(got, h.Session.ID)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("%q found %v, want %v", tc.query, got, tc.want)
			}
		})
	}

	t.Run("a hit names its message and shows the match in a one-line snippet", func(t *testing.T) {
		hits := search("HELM")
		if len(hits) != 1 {
			t.Fatalf("%+v", hits)
		}
		h := hits[0]
		if !strings.Contains(h.Snippet, "Helm chart") || strings.Contains(h.Snippet, "\n") ||
			string([]rune(h.Snippet)[h.Match[0]:h.Match[0]+h.Match[1]]) != "Helm" || !strings.HasPrefix(h.MessageID, "msg_") || !strings.HasPrefix(h.PartID, "prt_") {
			t.Fatalf("hit %+v", h)
		}
	})
	t.Run("an empty query is refused", func(t *testing.T) {
		if code, body := td.request(t, http.MethodGet, "/session/search?query=%20", ""); code != http.StatusBadRequest {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("another directory's sessions are not searched", func(t *testing.T) {
		var hits []session.SearchHit
		td.call(t, http.MethodGet, "/session/search?query=kubernetes&directory="+url.QueryEscape(t.TempDir()), "", http.StatusOK, &hits)
		if len(hits) != 0 {
			t.Fatalf("%+v", hits)
		}
	})
}
