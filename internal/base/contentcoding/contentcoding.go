// Package contentcoding reads a request's Accept-Encoding (RFC 9110 §12.5.3), so that the web UI's
// precompressed files and the API's compressed JSON are only sent to clients that said they can
// decode them, in the coding they prefer.
package contentcoding

import (
	"strconv"
	"strings"
)

// Choose returns the first of offers (most preferred by the server first) that the Accept-Encoding
// header accepts with the highest weight, or "" when the client accepts none of them and the body
// must be sent as it is. Codings are compared case-insensitively; "*" stands for every coding the
// header does not name; a weight of 0 refuses a coding; a malformed weight makes its element void.
// It runs for every response, so it reads the header in place instead of building a table.
func Choose(header string, offers ...string) string {
	if strings.TrimSpace(header) == "" {
		return ""
	}
	star, hasStar := starWeight(header)
	best, bestQ := "", 0.0
	for _, o := range offers {
		q, named := weightOf(header, o)
		if !named {
			if !hasStar {
				continue
			}
			q = star
		}
		if q > bestQ {
			best, bestQ = o, q
		}
	}
	return best
}

// Accepts reports whether the header accepts coding with a weight above 0.
func Accepts(header, coding string) bool {
	return Choose(header, coding) != ""
}

// weightOf is the highest weight the header gives coding by name, and whether it names it.
func weightOf(header, coding string) (q float64, named bool) {
	for rest := header; rest != ""; {
		var elem string
		elem, rest, _ = strings.Cut(rest, ",")
		name, params, _ := strings.Cut(elem, ";")
		name = strings.TrimSpace(name)
		if name == "" || name == "*" || !strings.EqualFold(name, coding) {
			continue
		}
		w, ok := weight(params)
		if !ok {
			continue
		}
		if !named || w > q {
			q, named = w, true
		}
	}
	return q, named
}

// starWeight is the weight of the header's last well-formed "*" element.
func starWeight(header string) (star float64, hasStar bool) {
	for rest := header; rest != ""; {
		var elem string
		elem, rest, _ = strings.Cut(rest, ",")
		name, params, _ := strings.Cut(elem, ";")
		if strings.TrimSpace(name) != "*" {
			continue
		}
		if w, ok := weight(params); ok {
			star, hasStar = w, true
		}
	}
	return star, hasStar
}

// weight reads the q parameter of one element (1 when absent); ok is false when it is malformed.
func weight(params string) (q float64, ok bool) {
	q = 1
	for rest := params; rest != ""; {
		var p string
		p, rest, _ = strings.Cut(rest, ";")
		k, v, found := strings.Cut(p, "=")
		if !found || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		v = strings.TrimSpace(v)
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 || len(v) > 5 {
			return 0, false
		}
		q = f
	}
	return q, true
}
