package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// page is what the server needs to know of the built index.html, read once by an HTML tokenizer:
// the CSP hashes of its inline scripts, and where a snapshot goes.
type page struct {
	// scriptHashes are "sha256-…" sources of the inline scripts (the bootstrap in the head and the
	// app's inlined module): the CSP allows exactly these, and no other inline script.
	scriptHashes []string
	// dataAt is the byte offset of the first inline script, the bootstrap, which looks for the
	// snapshot, so the snapshot goes right before it.
	dataAt int
}

func readPage(index []byte) (page, error) {
	var p page
	p.dataAt = -1
	z := html.NewTokenizer(bytes.NewReader(index))
	offset := 0
	for {
		tt := z.Next()
		raw := len(z.Raw())
		switch tt {
		case html.ErrorToken:
			if !errors.Is(z.Err(), io.EOF) {
				return page{}, z.Err()
			}
			if p.dataAt < 0 {
				return page{}, errors.New("no inline script, so no place for the first screen's data")
			}
			return p, nil
		case html.StartTagToken:
			name, hasAttr := z.TagName()
			if atom.Lookup(name) != atom.Script {
				break
			}
			inline, data := true, false
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				switch string(k) {
				case "src":
					inline = false
				case "type":
					data = strings.EqualFold(string(v), "application/json")
				}
			}
			start := offset
			offset += raw
			// A script element's content is one text token (none when it is empty).
			var body []byte
			if z.Next() == html.TextToken {
				body = z.Raw()
			}
			offset += len(z.Raw())
			if !inline || data {
				continue
			}
			sum := sha256.Sum256(body)
			p.scriptHashes = append(p.scriptHashes, "sha256-"+base64.StdEncoding.EncodeToString(sum[:]))
			if p.dataAt < 0 {
				p.dataAt = start
			}
			continue
		}
		offset += raw
	}
}
