package routes

import (
	"strings"
	"unicode"
)

// clientName is what the decision log and the "answered in another client" notices say answered: a
// name a person reads ("curl", "Chrome on Android", "tandem attach"), not a User-Agent string. A
// client that names itself (X-Tandem-Client) keeps its name; a User-Agent is reduced to its
// browser and platform, or to the program it names first.
func clientName(named, userAgent string) string {
	if n := strings.TrimSpace(named); n != "" {
		return clip(n)
	}
	ua := strings.TrimSpace(userAgent)
	if ua == "" {
		return ""
	}
	products := productTokens(ua)
	if len(products) == 0 {
		return clip(ua)
	}
	if products[0].name != "Mozilla" {
		return programName(products[0].name)
	}
	browser := browserOf(products)
	if browser == "" {
		return "a browser"
	}
	if platform := platformOf(ua); platform != "" {
		return browser + " on " + platform
	}
	return browser
}

// product is one "name/version" token of a User-Agent (RFC 9110, section 10.1.5).
type product struct{ name, version string }

// productTokens lists a User-Agent's products, leaving out the comments in parentheses.
func productTokens(ua string) []product {
	var out []product
	depth := 0
	var b strings.Builder
	flush := func() {
		tok := b.String()
		b.Reset()
		if tok == "" {
			return
		}
		name, version, _ := strings.Cut(tok, "/")
		out = append(out, product{name: name, version: version})
	}
	for _, r := range ua {
		switch {
		case r == '(':
			flush()
			depth++
		case r == ')':
			if depth > 0 {
				depth--
			}
		case depth > 0:
		case unicode.IsSpace(r):
			flush()
		default:
			b.WriteRune(r)
		}
	}
	flush()
	return out
}

// browserOf names the browser of a "Mozilla/5.0 (…) …" User-Agent by its most specific product:
// Edge and Opera also say Chrome, Chrome also says Safari.
func browserOf(products []product) string {
	has := map[string]bool{}
	for _, p := range products {
		has[p.name] = true
	}
	for _, b := range []struct{ token, name string }{
		{"EdgA", "Edge"}, {"EdgiOS", "Edge"}, {"Edg", "Edge"}, {"OPR", "Opera"}, {"SamsungBrowser", "Samsung Internet"},
		{"Firefox", "Firefox"}, {"FxiOS", "Firefox"}, {"CriOS", "Chrome"}, {"HeadlessChrome", "Headless Chrome"},
		{"Chrome", "Chrome"}, {"Chromium", "Chromium"}, {"Safari", "Safari"},
	} {
		if has[b.token] {
			return b.name
		}
	}
	return ""
}

// platformOf names the device or system a browser's User-Agent comment says it runs on.
func platformOf(ua string) string {
	for _, p := range []struct{ token, name string }{
		{"Android", "Android"}, {"iPhone", "iPhone"}, {"iPad", "iPad"}, {"CrOS", "ChromeOS"},
		{"Windows", "Windows"}, {"Macintosh", "macOS"}, {"Linux", "Linux"},
	} {
		if strings.Contains(ua, p.token) {
			return p.name
		}
	}
	return ""
}

// programName is how a non-browser client's first product is read.
func programName(name string) string {
	switch strings.ToLower(name) {
	case "curl":
		return "curl"
	case "wget":
		return "Wget"
	case "go-http-client":
		return "a Go program"
	case "python-requests", "python-urllib3", "python-httpx", "aiohttp":
		return "a Python script"
	case "node", "node-fetch", "undici", "axios":
		return "a Node.js script"
	case "opencode", "opencode-sdk":
		return "OpenCode"
	case "httpie":
		return "HTTPie"
	}
	return clip(name)
}

// clip keeps a client's own name short enough for a notice.
func clip(s string) string {
	const max = 48
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}
