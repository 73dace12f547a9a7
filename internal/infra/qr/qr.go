// Package qr draws QR codes of links: as text for a terminal (`tandem pair`) and as SVG for the web
// UI's "Pair a device", from one encoder, so both show the same picture of the same link.
package qr

import (
	"fmt"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// Terminal draws text as a QR code of Unicode half blocks, two modules a character, dark modules
// in the terminal's foreground colour on its background: the code is drawn inverted so that a
// terminal with a dark background shows dark modules on light, as scanners expect.
func Terminal(text string) (string, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return "", fmt.Errorf("qr: %w", err)
	}
	return q.ToSmallString(true), nil
}

// SVG draws text as a QR code in an SVG document, one path of unit squares with its quiet zone,
// scaled by whoever shows it.
func SVG(text string) (string, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return "", fmt.Errorf("qr: %w", err)
	}
	bits := q.Bitmap()
	n := len(bits)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges">`, n, n)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range bits {
		for x := 0; x < len(row); x++ {
			if !row[x] {
				continue
			}
			run := 1
			for x+run < len(row) && row[x+run] {
				run++
			}
			fmt.Fprintf(&b, "M%d %dh%dv1h-%dz", x, y, run, run)
			x += run - 1
		}
	}
	b.WriteString(`"/></svg>`)
	return b.String(), nil
}
