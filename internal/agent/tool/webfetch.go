package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
)

// WebFetch reads a web page for the model: http and https only, each host asked for ("webfetch",
// the host as the pattern) before tandem connects to it, redirects included. It sends nothing of
// tandem's own (no cookies, no credentials), reads at most MaxBytes, and gives the model at most
// OutputLimit bytes, cut with a note saying so.
type WebFetch struct {
	// Client is the HTTP client to use; nil: a new one without cookies. Its redirect policy is
	// replaced for each call by one that asks for every new host.
	Client *http.Client
	// MaxBytes is how much of a response is read (default 5 MiB); the rest is never downloaded.
	MaxBytes int64
	// OutputLimit is how much of the converted page the model gets (default 100 KiB).
	OutputLimit int
}

type webFetchInput struct {
	URL     string  `json:"url"`
	Format  string  `json:"format"`
	Timeout flexInt `json:"timeout"`
}

const (
	webFetchDefaultTimeout = 30 * time.Second
	webFetchMaxTimeout     = 120 * time.Second
	webFetchMaxRedirects   = 10
)

func (WebFetch) Name() string { return "webfetch" }

func (WebFetch) Description() string {
	return `Fetches a web page (http or https) and returns its content as Markdown (the default), plain text or raw HTML.

- The person may be asked to allow each host the fetch contacts, redirects included.
- Use it for pages the user names or documentation you need; it does not search the web.
- Long pages are cut, with a note saying where.
- timeout is in seconds (default 30, at most 120).`
}

func (WebFetch) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "The URL to fetch (http:// or https://)"},
    "format": {"type": "string", "enum": ["text", "markdown", "html"], "description": "The format to return the content in (default markdown)"},
    "timeout": {"type": "number", "description": "Optional timeout in seconds (default 30, max 120)"}
  },
  "required": ["url"],
  "additionalProperties": false
}`)
}

func (w WebFetch) Run(ctx context.Context, call *Call) (Result, error) {
	var in webFetchInput
	if err := decodeInput("webfetch", call.Input, &in); err != nil {
		return Result{}, err
	}
	switch in.Format {
	case "":
		in.Format = "markdown"
	case "text", "markdown", "html":
	default:
		return Result{}, invalid("format: expected \"text\", \"markdown\" or \"html\", got %q", in.Format)
	}
	timeout := webFetchDefaultTimeout
	if in.Timeout.Set {
		if in.Timeout.Value <= 0 {
			return Result{}, invalid("timeout: expected a positive number of seconds, got %d", in.Timeout.Value)
		}
		timeout = min(time.Duration(in.Timeout.Value)*time.Second, webFetchMaxTimeout)
	}
	u, err := fetchableURL(strings.TrimSpace(in.URL))
	if err != nil {
		return Result{}, err
	}
	asked := []string{}
	askHost := func(ctx context.Context, u *url.URL, via string) error {
		host := strings.ToLower(u.Hostname())
		if slices.Contains(asked, host) {
			return nil
		}
		meta := map[string]any{"url": u.String(), "format": in.Format, "timeout": int(timeout / time.Second)}
		if via != "" {
			meta["redirectedFrom"] = via
		}
		if err := call.Gate.Check(ctx, Ask{Permission: "webfetch", Patterns: []string{host}, Always: []string{host}, Metadata: meta}); err != nil {
			return err
		}
		asked = append(asked, host)
		return nil
	}
	if err := askHost(ctx, u, ""); err != nil {
		return Result{}, err
	}

	client := &http.Client{}
	if w.Client != nil {
		c := *w.Client
		client = &c
	} else {
		// A transport of its own, without pooled connections: nothing outlives the call.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DisableKeepAlives = true
		defer tr.CloseIdleConnections()
		client.Transport = tr
	}
	client.Jar = nil // nothing remembered between fetches, and nothing of tandem's sent
	// Redirects are followed here, not by the client, so that each new host is asked for before
	// tandem connects to it, and the wait for the person does not count against the timeout.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var resp *http.Response
	var cancel context.CancelFunc
	for hop := 0; ; hop++ {
		var reqCtx context.Context
		reqCtx, cancel = context.WithTimeout(ctx, timeout)
		resp, err = fetchOnce(reqCtx, client, u, in.Format)
		if err != nil {
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				return Result{}, fmt.Errorf("fetching %s timed out after %s", u, timeout)
			}
			return Result{}, fmt.Errorf("fetching %s: %w", u, err)
		}
		loc := resp.Header.Get("Location")
		if resp.StatusCode < 300 || resp.StatusCode >= 400 || loc == "" {
			break
		}
		_ = resp.Body.Close()
		cancel()
		if hop >= webFetchMaxRedirects {
			return Result{}, invalid("%s redirected more than %d times; stopped.", in.URL, webFetchMaxRedirects)
		}
		next, err := u.Parse(loc)
		if err == nil {
			next, err = fetchableURL(next.String())
		}
		if err != nil {
			return Result{}, invalid("%s redirected to %q, which is not fetched: %v", u, loc, err)
		}
		if err := askHost(ctx, next, u.String()); err != nil {
			return Result{}, err
		}
		u = next
	}
	defer cancel()
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return Result{}, fmt.Errorf("fetching %s: the server answered %s", u, resp.Status)
	}
	maxBytes := w.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 5 << 20
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Result{}, fmt.Errorf("fetching %s timed out after %s", u, timeout)
		}
		return Result{}, fmt.Errorf("reading %s: %w", u, err)
	}
	downloadCut := int64(len(body)) > maxBytes
	if downloadCut {
		body = body[:maxBytes]
	}
	contentType := resp.Header.Get("Content-Type")
	mediaType, _, _ := mime.ParseMediaType(contentType)
	if mediaType == "" {
		mediaType = http.DetectContentType(body)
		mediaType, _, _ = mime.ParseMediaType(mediaType)
	}
	if !textual(mediaType) {
		return Result{}, invalid("%s is %s, not a text page; webfetch returns text only.", u, mediaType)
	}
	text := strings.ToValidUTF8(string(body), "\uFFFD")
	isHTML := mediaType == "text/html" || mediaType == "application/xhtml+xml"
	if isHTML {
		switch in.Format {
		case "markdown":
			md, err := htmltomarkdown.ConvertString(text, converter.WithDomain(u.Scheme+"://"+u.Host))
			if err != nil {
				return Result{}, fmt.Errorf("converting %s to Markdown: %w", u, err)
			}
			text = md
		case "text":
			text = htmlText(text)
		}
	}
	limit := w.OutputLimit
	if limit <= 0 {
		limit = 100 << 10
	}
	outputCut := len(text) > limit
	if outputCut {
		text = strings.ToValidUTF8(text[:limit], "")
	}
	switch {
	case downloadCut:
		text += fmt.Sprintf("\n\n[webfetch: cut here. The page is larger than %d bytes; only its first %d bytes were downloaded.]", maxBytes, maxBytes)
	case outputCut:
		text += fmt.Sprintf("\n\n[webfetch: cut here. The %s content is longer than %d bytes; the rest was left out.]", in.Format, limit)
	}
	return Result{
		Title:  fmt.Sprintf("%s (%s)", u, mediaType),
		Output: text,
		Metadata: map[string]any{
			"url":         u.String(),
			"status":      resp.StatusCode,
			"contentType": contentType,
			"format":      in.Format,
			"truncated":   downloadCut || outputCut,
		},
	}, nil
}

// fetchOnce sends one GET with nothing but the headers every fetch sends.
func fetchOnce(ctx context.Context, client *http.Client, u *url.URL, format string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "tandem-webfetch/1")
	req.Header.Set("Accept", acceptFor(format))
	return client.Do(req)
}

// fetchableURL parses a URL the tool may fetch: absolute, http or https, with a host, and without
// a user name or password in it.
func fetchableURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, invalid("The webfetch tool needs a url.")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalid("url: %v", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return nil, invalid("url: %q has no scheme; write it with https:// (or http://).", raw)
	default:
		return nil, invalid("url: only http and https URLs are fetched, not %s:.", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, invalid("url: %q names no host.", raw)
	}
	if u.User != nil {
		return nil, invalid("url: a URL with a user name or password is not fetched; leave them out.")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	return u, nil
}

func acceptFor(format string) string {
	switch format {
	case "text":
		return "text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1"
	case "html":
		return "text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, */*;q=0.1"
	}
	return "text/markdown;q=1.0, text/x-markdown;q=0.9, text/plain;q=0.8, text/html;q=0.7, */*;q=0.1"
}

// textual reports whether a media type is text a model can read.
func textual(mediaType string) bool {
	if strings.HasPrefix(mediaType, "text/") {
		return true
	}
	switch mediaType {
	case "application/json", "application/xml", "application/xhtml+xml", "application/javascript",
		"application/ld+json", "application/rss+xml", "application/atom+xml", "application/x-yaml", "application/yaml", "application/toml":
		return true
	}
	return strings.HasSuffix(mediaType, "+json") || strings.HasSuffix(mediaType, "+xml")
}

// htmlText is the readable text of an HTML page: its text nodes, without scripts, styles and other
// content that is not shown, with a line break after each block.
func htmlText(page string) string {
	z := html.NewTokenizer(strings.NewReader(page))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.TrimSpace(collapseBlankLines(b.String()))
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "noscript", "iframe", "object", "embed", "template", "svg":
				skip++
			case "br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "section", "article", "header", "footer":
				b.WriteByte('\n')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "noscript", "iframe", "object", "embed", "template", "svg":
				if skip > 0 {
					skip--
				}
			case "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "section", "article", "header", "footer":
				b.WriteByte('\n')
			}
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		}
	}
}

// collapseBlankLines trims each line and keeps at most one empty line in a row.
func collapseBlankLines(s string) string {
	var out []string
	blank := false
	for l := range strings.SplitSeq(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		out = append(out, l)
		blank = false
	}
	return strings.Join(out, "\n")
}
